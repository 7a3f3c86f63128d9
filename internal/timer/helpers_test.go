package timer

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// memStore is an in-memory CommitLog with consume queues: the part of the
// store the service uses, fast enough for a million timers.
type memStore struct {
	mu     sync.Mutex
	log    []byte
	queues map[string][]int64
	cbs    []func(string, int32, int64)
	now    func() int64
	// fail, when set, may refuse a put (tests of retries).
	fail func(m *message.Inner) *store.PutResult
	// With manualFlush the flushed offset moves only with flush, and
	// crashTail loses what lies past it.
	manualFlush bool
	flushed     int64
	// getHook, when set, runs before every GetMessage (tests that hold
	// the replay of the timer topic back).
	getHook atomic.Pointer[func(topic string, maxMsgNums int32)]
}

func (s *memStore) flush() {
	s.mu.Lock()
	s.flushed = int64(len(s.log))
	s.mu.Unlock()
}

// crashTail cuts the CommitLog back to the flushed offset, as a power loss
// under ASYNC_FLUSH does, and the queue entries past it.
func (s *memStore) crashTail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = s.log[:s.flushed]
	for k, q := range s.queues {
		n := len(q)
		for n > 0 && q[n-1] >= s.flushed {
			n--
		}
		s.queues[k] = q[:n]
	}
}

func newMemStore(now func() int64) *memStore {
	return &memStore{queues: map[string][]int64{}, now: now}
}

func qkey(topic string, qid int32) string { return topic + "/" + strconv.Itoa(int(qid)) }

func (s *memStore) PutMessage(m *message.Inner, done func(store.PutResult)) {
	if s.fail != nil {
		if r := s.fail(m); r != nil {
			done(*r)
			return
		}
	}
	rec := message.EncodeRecord(nil, m, "")
	s.mu.Lock()
	k := qkey(m.Topic, m.QueueID)
	phy := int64(len(s.log))
	qo := int64(len(s.queues[k]))
	ts := s.now()
	message.PatchRecord(rec, qo, phy, ts)
	s.log = append(s.log, rec...)
	s.queues[k] = append(s.queues[k], phy)
	cbs := s.cbs
	s.mu.Unlock()
	for _, cb := range cbs {
		cb(m.Topic, m.QueueID, qo+1)
	}
	done(store.PutResult{Status: store.PutOK, WroteOffset: phy, WroteBytes: int32(len(rec)), QueueOffset: qo, MsgNum: 1, StoreTimestamp: ts})
}

func (s *memStore) recordLocked(phy int64) []byte {
	n := int64(binary.BigEndian.Uint32(s.log[phy:]))
	return s.log[phy : phy+n]
}

func (s *memStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter store.MessageFilter) *store.GetResult {
	if h := s.getHook.Load(); h != nil {
		(*h)(topic, maxMsgNums)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[qkey(topic, queueID)]
	r := &store.GetResult{MaxOffset: int64(len(q))}
	switch {
	case !ok:
		r.Status = store.NoMatchedLogicQueue
		return r
	case len(q) == 0:
		r.Status = store.NoMessageInQueue
		return r
	case offset < 0:
		r.Status, r.NextBeginOffset = store.OffsetTooSmall, 0
		return r
	case offset == int64(len(q)):
		r.Status, r.NextBeginOffset = store.OffsetOverflowOne, offset
		return r
	case offset > int64(len(q)):
		r.Status, r.NextBeginOffset = store.OffsetOverflowBadly, int64(len(q))
		return r
	}
	r.Status = store.Found
	for o := offset; o < int64(len(q)) && int32(len(r.Buffers)) < maxMsgNums; o++ {
		rec := append([]byte(nil), s.recordLocked(q[o])...)
		r.Buffers = append(r.Buffers, rec)
		r.QueueOffsets = append(r.QueueOffsets, o)
		r.BufferTotalSize += len(rec)
		r.NextBeginOffset = o + 1
	}
	return r
}

func (s *memStore) LookMessageByOffset(phy int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if phy < 0 || phy >= int64(len(s.log)) {
		return nil, fmt.Errorf("%w: %d", store.ErrOffsetNotFound, phy)
	}
	return append([]byte(nil), s.recordLocked(phy)...), nil
}

func (s *memStore) OnDispatch(fn func(string, int32, int64)) {
	s.mu.Lock()
	s.cbs = append(append([]func(string, int32, int64){}, s.cbs...), fn)
	s.mu.Unlock()
}

func (s *memStore) MinPhyOffset() int64 { return 0 }
func (s *memStore) MaxPhyOffset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.log))
}
func (s *memStore) Stats() store.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(len(s.log))
	if s.manualFlush {
		return store.Stats{CommitLogMax: n, CommitLogFlushed: s.flushed}
	}
	return store.Stats{CommitLogMax: n, CommitLogFlushed: n}
}

// delivered lists the records of a topic's queue 0.
func (s *memStore) records(topic string) []*message.Ext {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*message.Ext
	for _, phy := range s.queues[qkey(topic, 0)] {
		e, err := message.DecodeRecord(s.recordLocked(phy))
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return out
}

// timerMsg builds a message for topic "T" with one timer property.
func timerMsg(key, prop, value string) *message.Inner {
	return &message.Inner{
		Topic: "T", QueueID: 0, Body: []byte("body-" + key),
		Properties: map[string]string{message.PropertyKeys: key, message.PropertyUniqClientMessageIDKeyIdx: key,
			message.PropertyTags: "tg", prop: value},
		BornTimestamp: 1700000000000,
		BornHost:      message.Addr{IP: []byte{127, 0, 0, 1}, Port: 5000},
		StoreHost:     message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911},
	}
}

// scheduleSync schedules m and waits for the store's answer.
func scheduleSync(t testing.TB, s *Service, m *message.Inner) store.PutResult {
	t.Helper()
	ch := make(chan store.PutResult, 1)
	ok, err := s.Schedule(m, func(r store.PutResult) { ch <- r })
	if err != nil || !ok {
		t.Fatalf("Schedule: ok=%v err=%v", ok, err)
	}
	r := <-ch
	if r.Status != store.PutOK {
		t.Fatalf("Schedule put: %d %s", r.Status, r.Remark)
	}
	return r
}

// waitFor polls cond (yielding) until it holds; the wall-clock bound only
// turns a hang into a failure.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
