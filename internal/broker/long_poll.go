package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// longPollRecheck is how often held pulls are re-checked against the queue
// (a safety net behind dispatch wake-ups).
const longPollRecheck = 5 * time.Second

// heldPull is a pull request waiting for messages.
type heldPull struct {
	r    *transport.Responder
	h    *pullHeader
	done atomic.Bool // set by whoever answers it
	// timeout answers the pull when its suspend time passes; set and
	// stopped under longPollService.mu, so an answered pull is not kept
	// reachable by its timer until then.
	timeout *time.Timer
}

// longPollService holds pulls that found no message. A held pull is run
// again (without permission to suspend) when the store dispatches a message
// to its queue, when its timeout passes, at the periodic re-check if the
// queue has grown, and at shutdown. Held pulls occupy no worker while
// held; the re-run goes through the pull executor (its workers and queue
// bound), so a burst of wake-ups is bounded by it.
type longPollService struct {
	b      *Broker
	mu     sync.Mutex
	table  map[string][]*heldPull // "topic@queueId" -> held pulls
	closed bool
}

func newLongPollService(b *Broker) *longPollService {
	return &longPollService{b: b, table: make(map[string][]*heldPull)}
}

func pullKey(topic string, queueID int32) string {
	return topic + "@" + strconv.Itoa(int(queueID))
}

// suspend holds p for at most timeout.
func (s *longPollService) suspend(p *heldPull, timeout time.Duration) {
	key := pullKey(p.h.topic, p.h.queueID)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.resume(p)
		return
	}
	p.timeout = time.AfterFunc(timeout, func() { s.resume(p) })
	s.table[key] = append(s.table[key], p)
	s.mu.Unlock()
	// A message dispatched between the read and the registration above
	// would not wake p: look once more.
	if s.b.store.MaxOffsetInQueue(p.h.topic, p.h.queueID) > p.h.queueOffset {
		s.resume(p)
	}
}

// onDispatch is the store's dispatch callback: it wakes the pulls held on
// the queue that now has messages past their offset. It never blocks.
func (s *longPollService) onDispatch(topic string, queueID int32, maxOffset int64) {
	key := pullKey(topic, queueID)
	s.mu.Lock()
	list := s.table[key]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	var woken []*heldPull
	kept := list[:0]
	for _, p := range list {
		if maxOffset > p.h.queueOffset {
			woken = append(woken, p)
		} else {
			kept = append(kept, p)
		}
	}
	s.storeListLocked(key, kept)
	s.mu.Unlock()
	for _, p := range woken {
		s.resume(p)
	}
}

func (s *longPollService) storeListLocked(key string, list []*heldPull) {
	if len(list) == 0 {
		delete(s.table, key)
		return
	}
	// Clear the tail so dropped pulls can be collected.
	full := s.table[key]
	for i := len(list); i < len(full); i++ {
		full[i] = nil
	}
	s.table[key] = list
}

// resume answers p once: the pull runs again through its pull executor.
// A pull whose connection closed is not run: the transport released it.
func (s *longPollService) resume(p *heldPull) {
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	s.remove(p)
	select {
	case <-p.r.Conn().Closed():
		return
	default:
	}
	s.b.resumePull(p.r, p.h)
}

func (s *longPollService) remove(p *heldPull) {
	key := pullKey(p.h.topic, p.h.queueID)
	s.mu.Lock()
	if p.timeout != nil {
		p.timeout.Stop()
	}
	list := s.table[key]
	for i, q := range list {
		if q == p {
			copy(list[i:], list[i+1:])
			s.storeListLocked(key, list[:len(list)-1])
			break
		}
	}
	s.mu.Unlock()
}

// run re-checks held pulls every longPollRecheck until the broker stops.
func (s *longPollService) run() {
	t := time.NewTicker(longPollRecheck)
	defer t.Stop()
	for {
		select {
		case <-s.b.stop:
			return
		case <-t.C:
			s.recheck()
		}
	}
}

func (s *longPollService) recheck() {
	s.mu.Lock()
	var all []*heldPull
	for _, list := range s.table {
		all = append(all, list...)
	}
	s.mu.Unlock()
	maxOf := make(map[string]int64)
	for _, p := range all {
		key := pullKey(p.h.topic, p.h.queueID)
		m, ok := maxOf[key]
		if !ok {
			m = s.b.store.MaxOffsetInQueue(p.h.topic, p.h.queueID)
			maxOf[key] = m
		}
		closed := false
		select {
		case <-p.r.Conn().Closed():
			closed = true
		default:
		}
		if m > p.h.queueOffset || closed {
			s.resume(p)
		}
	}
}

// held returns the number of held pulls.
func (s *longPollService) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, list := range s.table {
		n += len(list)
	}
	return n
}

// shutdown answers every held pull now (their re-runs are queued on the
// pull executors; the server's drain waits for their answers) and refuses
// to hold new ones.
func (s *longPollService) shutdown() {
	s.mu.Lock()
	s.closed = true
	var all []*heldPull
	for _, list := range s.table {
		all = append(all, list...)
	}
	s.mu.Unlock()
	for _, p := range all {
		s.resume(p)
	}
}
