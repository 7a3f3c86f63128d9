// Package longpoll holds pulls that found no message until their queue
// grows, their suspend time passes, the periodic re-check finds messages,
// their connection closes or the broker shuts down. A held pull occupies no
// worker while held; it is handed back through Deps.Resume, which re-runs
// it through its pull executor (its workers and queue bound), so a burst
// of wake-ups is bounded by that executor.
//
// It owns the hold table (topic and queue to held pulls), the wake-ups by
// topic and queue and the expiry. It reads the queue's end through
// Deps.MaxOffset and nothing else of the store. It must not import the
// store, the metadata or the wiring (internal/broker); its only module
// import is remoting/transport (the responder of a held request).
package longpoll

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// Recheck is how often held pulls are re-checked against the queue (a
// safety net behind dispatch wake-ups).
const Recheck = 5 * time.Second

// Pull is a pull request waiting for messages.
type Pull struct {
	Responder *transport.Responder
	Topic     string
	QueueID   int32
	// Offset is the queue offset the pull asked for: the pull wakes when
	// the queue's end passes it.
	Offset int64
	// Header is the caller's parsed request, handed back by Deps.Resume.
	Header any

	done atomic.Bool // set by whoever answers it
	// timeout answers the pull when its suspend time passes; set and
	// stopped under Service.mu, so an answered pull is not kept reachable
	// by its timer until then.
	timeout *time.Timer
}

// Deps is what the service needs from the broker.
type Deps struct {
	// MaxOffset is the next offset to be written in the queue.
	MaxOffset func(topic string, queueID int32) int64
	// Resume re-runs a held pull through its pull executor. It is called
	// once per pull, never for a pull whose connection closed.
	Resume func(p *Pull)
	// OnHold, when set, is called after a pull is held: the store then
	// dispatches new records at once instead of gathering them.
	OnHold func()
}

// Service holds pulls that found no message.
type Service struct {
	d      Deps
	mu     sync.Mutex
	table  map[string][]*Pull // "topic@queueId" -> held pulls
	held   atomic.Int64       // pulls in table
	closed bool
}

// New builds the service.
func New(d Deps) *Service {
	return &Service{d: d, table: make(map[string][]*Pull)}
}

func pullKey(topic string, queueID int32) string {
	return topic + "@" + strconv.Itoa(int(queueID))
}

// Suspend holds p for at most timeout.
func (s *Service) Suspend(p *Pull, timeout time.Duration) {
	p.Responder.MarkLongPolled() // its answer is long-polled (is_long_polling)
	key := pullKey(p.Topic, p.QueueID)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.resume(p)
		return
	}
	p.timeout = time.AfterFunc(timeout, func() { s.resume(p) })
	s.table[key] = append(s.table[key], p)
	s.held.Add(1)
	s.mu.Unlock()
	if s.d.OnHold != nil {
		s.d.OnHold()
	}
	// A message dispatched between the read and the registration above
	// would not wake p: look once more.
	if s.d.MaxOffset(p.Topic, p.QueueID) > p.Offset {
		s.resume(p)
	}
}

// OnDispatch is the store's dispatch callback: it wakes the pulls held on
// the queue that now has messages past their offset. It never blocks.
func (s *Service) OnDispatch(topic string, queueID int32, maxOffset int64) {
	key := pullKey(topic, queueID)
	s.mu.Lock()
	list := s.table[key]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	var woken []*Pull
	kept := list[:0]
	for _, p := range list {
		if maxOffset > p.Offset {
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

func (s *Service) storeListLocked(key string, list []*Pull) {
	s.held.Add(int64(len(list) - len(s.table[key])))
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
func (s *Service) resume(p *Pull) {
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	s.remove(p)
	select {
	case <-p.Responder.Conn().Closed():
		return
	default:
	}
	s.d.Resume(p)
}

func (s *Service) remove(p *Pull) {
	key := pullKey(p.Topic, p.QueueID)
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

// Run re-checks held pulls every Recheck until stop is closed.
func (s *Service) Run(stop <-chan struct{}) {
	t := time.NewTicker(Recheck)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.Recheck()
		}
	}
}

// Recheck resumes every held pull whose queue has grown past its offset
// or whose connection closed.
func (s *Service) Recheck() {
	s.mu.Lock()
	var all []*Pull
	for _, list := range s.table {
		all = append(all, list...)
	}
	s.mu.Unlock()
	maxOf := make(map[string]int64)
	for _, p := range all {
		key := pullKey(p.Topic, p.QueueID)
		m, ok := maxOf[key]
		if !ok {
			m = s.d.MaxOffset(p.Topic, p.QueueID)
			maxOf[key] = m
		}
		closed := false
		select {
		case <-p.Responder.Conn().Closed():
			closed = true
		default:
		}
		if m > p.Offset || closed {
			s.resume(p)
		}
	}
}

// Held returns the number of held pulls.
func (s *Service) Held() int { return int(s.held.Load()) }

// Holding reports whether any pull is held (one atomic load).
func (s *Service) Holding() bool { return s.held.Load() > 0 }

// Each calls fn for every held pull, under the table's lock (fn must not
// call back into the service).
func (s *Service) Each(fn func(p *Pull)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range s.table {
		for _, p := range list {
			fn(p)
		}
	}
}

// Shutdown answers every held pull now (their re-runs are queued on the
// pull executors; the server's drain waits for their answers) and refuses
// to hold new ones.
func (s *Service) Shutdown() {
	s.mu.Lock()
	s.closed = true
	var all []*Pull
	for _, list := range s.table {
		all = append(all, list...)
	}
	s.mu.Unlock()
	for _, p := range all {
		s.resume(p)
	}
}
