package timer

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

const (
	// Topic is the system topic that holds accepted timer messages
	// (RocketMQ's TimerMessageStore.TIMER_TOPIC), queue 0.
	Topic = "rmq_sys_wheel_timer"
	// PropertyTimerSource marks a delivered message with the CommitLog
	// offset of the timer record it came from, so that recovery can tell
	// which timers were delivered after the last checkpoint. The broker
	// should drop it from messages that clients send.
	PropertyTimerSource = "__TIMER_SRC"

	// enqueueGroup names the service's consume-queue reads.
	enqueueGroup  = "TIMER_ENQUEUE"
	enqueueBatch  = 64
	enqueueIdle   = time.Second
	retryDelayMs  = 1000
	flushWaitPoll = 10 * time.Millisecond
	flushWaitMax  = 5 * time.Second
	// closeFlushWait bounds the last checkpoint's wait for the CommitLog
	// flush; without it recovery starts from the previous checkpoint.
	closeFlushWait = time.Second
)

var timerProps = [...]string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS}

const (
	stateNew int32 = iota
	stateRunning
	stateClosed
)

// Service is the persistent timing wheel. Create it with New after the
// store has started, Start it, call Schedule (or Prepare) from the send
// path, and Close it before the store shuts down.
type Service struct {
	cfg       Config
	st        Store
	fs        vfs.FS
	clock     Clock
	logger    *slog.Logger
	deliver   DeliverFunc
	wheelPath string
	clSize    int64

	maxDelaySec atomic.Int64
	congest     atomic.Int64
	readRate    atomic.Int64
	state       atomic.Int32

	log *TimerLog

	mu        sync.Mutex
	nslots    int64
	heads     []int64
	counts    []atomic.Int32 // entries linked in each slot (read lock-free by Schedule)
	segLive   map[int64]int64
	cursor    int64 // first second not fully delivered
	scanFrom  int64 // CommitLog offset before every delivery of the cursor's slot
	enqOffset int64 // next consume-queue offset of Topic to link
	enqPhyEnd int64 // end of the last linked timer record in the CommitLog
	replayTo  int64 // consume-queue end at Start: linked before any delivery
	cur       *loadedSlot
	skip      map[int64]int64 // delivered after the checkpoint: timer record offset -> due
	skipUntil int64           // last second the previous run can have been delivering

	wake    chan struct{}
	enqWake chan struct{}
	linked  chan struct{} // signalled after each linked batch
	quit    chan struct{}
	wg      sync.WaitGroup
	closed  sync.Once

	ckMu      sync.Mutex
	flushWait time.Duration // longest a checkpoint waits for the CommitLog flush
	ckErr     atomic.Pointer[string]
	ckNoSpace atomic.Int64 // checkpoints that found no space for the wheel image (retried)
	ckLast    atomic.Int64

	recovering atomic.Bool
	pending    atomic.Int64
	c          counters
	lateness   stats.Histogram
}

type counters struct {
	scheduled, delivered, rejectedIllegal, rejectedFlow, lost, dropped, retries,
	rolled, skipped, malformed, corrupt, checkpoints atomic.Int64
}

// slotEntry is a timer of the slot being delivered.
type slotEntry struct {
	at   int64 // when to act (Unix ms): the due time, or a retry time
	due  int64
	phy  int64
	pos  int64
	size int32
}

type entryHeap []slotEntry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].phy < h[j].phy
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(slotEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// loadedSlot is the cursor's slot while it is being delivered.
type loadedSlot struct {
	sec      int64
	headSnap int64 // head when the slot was loaded; the walk starts here
	walked   bool
	ready    entryHeap       // timers of this round, by time to act
	rolled   []slotEntry     // timers of later rounds, re-linked at finish
	refs     map[int64]int64 // timer-log file start -> entries of this slot's list
}

// New checks the configuration. Start opens the files and recovers.
func New(cfg Config, st Store) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, st: st, fs: cfg.FS, clock: cfg.Clock, logger: cfg.Logger, deliver: cfg.Deliver,
		wheelPath: filepath.Join(cfg.StorePathRootDir, "timerwheel"), clSize: cfg.CommitLogFileSize,
		segLive: map[int64]int64{}, skip: map[int64]int64{},
		wake: make(chan struct{}, 1), enqWake: make(chan struct{}, 1), linked: make(chan struct{}, 1),
		quit: make(chan struct{}), flushWait: flushWaitMax}
	if s.fs == nil {
		s.fs = vfs.Default
	}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.deliver == nil {
		s.deliver = st.PutMessage
	}
	if s.clSize == 0 {
		if c, ok := st.(interface{ Config() store.Config }); ok {
			s.clSize = c.Config().MappedFileSizeCommitLog
		}
	}
	if cfg.DeliverWindow == 0 {
		s.cfg.DeliverWindow = 256
	}
	s.maxDelaySec.Store(cfg.MaxDelaySec)
	s.congest.Store(cfg.CongestNumEachSlot)
	s.readRate.Store(cfg.ReadBytesPerSec)
	return s, nil
}

// SetLive changes the keys that may change at run time: timerMaxDelaySec,
// timerCongestNumEachSlot and timerReadBytesPerSec (values <= 0 are
// ignored, except readBytesPerSec where 0 means unlimited).
func (s *Service) SetLive(maxDelaySec, congestNumEachSlot, readBytesPerSec int64) {
	if maxDelaySec > 0 {
		s.maxDelaySec.Store(maxDelaySec)
	}
	if congestNumEachSlot > 0 {
		s.congest.Store(congestNumEachSlot)
	}
	if readBytesPerSec >= 0 {
		s.readRate.Store(readBytesPerSec)
	}
}

func (s *Service) nowMs() int64 { return s.clock.Now().UnixMilli() }

func (s *Service) idx(sec int64) int64 { return sec % s.nslots }

func (s *Service) fileStart(pos int64) int64 { return pos - pos%s.cfg.LogFileSize }

// Start loads the wheel file, opens the timer log and starts the
// goroutines: linking new timer records from the consume queue, the
// recovery scan followed by delivery, and the periodic checkpoint. The
// store must be started. Schedule is accepted as soon as Start returns;
// deliveries begin when the recovery scan is done (Stats().Recovering).
func (s *Service) Start() error {
	if !s.state.CompareAndSwap(stateNew, stateRunning) {
		return fmt.Errorf("timer: Start called twice or after Close: %w", ErrClosed)
	}
	if err := s.recoverFiles(); err != nil {
		s.state.Store(stateClosed)
		if s.log != nil {
			s.log.close()
		}
		return err
	}
	s.st.OnDispatch(func(topic string, _ int32, _ int64) {
		if topic == Topic {
			signal(s.enqWake)
		}
	})
	s.recovering.Store(true)
	s.wg.Add(2)
	go s.runEnqueue()
	go s.runRecoverThenDeliver()
	if s.cfg.FlushIntervalMs > 0 {
		s.wg.Add(1)
		go s.runCheckpoints()
	}
	return nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// recoverFiles loads the wheel file (or starts a new wheel) and trims the
// timer log to the checkpoint.
func (s *Service) recoverFiles() error {
	img, err := loadWheelImage(s.fs, s.wheelPath)
	if err != nil {
		return err
	}
	s.log, err = openTimerLog(s.fs, filepath.Join(s.cfg.StorePathRootDir, "timerlog"), s.cfg.LogFileSize)
	if err != nil {
		return err
	}
	if img == nil {
		n := int64(s.cfg.WheelSlots)
		if n == 0 {
			n = s.cfg.MaxDelaySec + 3600
		}
		img = &wheelImage{slots: uint32(n), cursor: s.nowMs() / 1000, scanFrom: s.st.MinPhyOffset()}
		// Without a wheel file every timer record of the topic is linked
		// again and the whole CommitLog is searched for delivery markers;
		// with no timer record at all there is nothing to search.
		if r := s.st.GetMessage(enqueueGroup, Topic, 0, 0, 1, 1, nil); r.Status == store.NoMatchedLogicQueue || r.Status == store.NoMessageInQueue {
			img.scanFrom = s.st.MaxPhyOffset()
			r.Release()
		} else {
			r.Release()
		}
		existing, err := s.log.existing()
		if err != nil {
			return err
		}
		for _, start := range existing {
			if err := s.log.remove(start); err != nil {
				return err
			}
		}
	}
	s.nslots = int64(img.slots)
	s.heads = make([]int64, s.nslots)
	for i := range s.heads {
		s.heads[i] = nilPos
	}
	s.counts = make([]atomic.Int32, s.nslots)
	var pending int64
	for _, h := range img.heads {
		s.heads[h.index] = h.head
		s.counts[h.index].Store(int32(h.count))
		pending += int64(h.count)
	}
	s.pending.Store(pending)
	for _, sg := range img.segs {
		s.segLive[sg.start] = sg.live
	}
	s.cursor, s.scanFrom, s.enqOffset, s.enqPhyEnd = img.cursor, img.scanFrom, img.enqOffset, img.scanFrom
	if r := s.st.GetMessage(enqueueGroup, Topic, 0, img.enqOffset, 1, 1, nil); r != nil {
		s.replayTo = r.MaxOffset
		r.Release()
	}
	s.log.end.Store(img.logEnd)
	// Files past the checkpoint's end, and files the checkpoint no longer
	// references, hold nothing reachable.
	existing, err := s.log.existing()
	if err != nil {
		return err
	}
	last := s.fileStart(img.logEnd)
	for _, start := range existing {
		if start > last || (start < last && s.segLive[start] <= 0) {
			if err := s.log.remove(start); err != nil {
				return err
			}
		}
	}
	return nil
}

// Prepare decides whether msg is a timer message for the wheel and, when it
// is, rewrites it in place for storing in Topic: REAL_TOPIC, REAL_QID and
// TIMER_OUT_MS (the exact due time) are added, Topic/queue 0 set, the tag
// code set to the due time and PropertiesString re-encoded. It returns
// false, nil when msg is to be stored as it is: no timer property, a half
// or rollback message, a DELAY level (the level wins; the timer properties
// are removed), an already delivered timer message (TIMER_OUT_MS present),
// or a due time that is not in the future (delivered at once, as RocketMQ
// does). It returns an error wrapping ErrIllegal, ErrFlowControl or
// ErrNotRunning to refuse the message; ResponseCode maps it.
func (s *Service) Prepare(msg *message.Inner) (bool, error) {
	p := msg.Properties
	if p == nil {
		if msg.PropertiesString == "" {
			return false, nil
		}
		p = message.DecodeProperties(msg.PropertiesString)
		msg.Properties = p
	}
	if !HasTimerProperty(p) {
		return false, nil
	}
	if t := message.TransactionValue(msg.SysFlag); t != message.TransactionNotType && t != message.TransactionCommitType {
		return false, nil
	}
	if lv, err := strconv.Atoi(p[message.PropertyDelayTimeLevel]); err == nil && lv > 0 {
		for _, k := range timerProps {
			delete(p, k)
		}
		msg.PropertiesString = message.EncodeProperties(p)
		return false, nil
	}
	if _, ok := p[message.PropertyTimerOutMS]; ok || msg.Topic == Topic {
		return false, nil
	}
	if s.state.Load() != stateRunning {
		return false, fmt.Errorf("%w: the timer wheel is not started or is shut down", ErrNotRunning)
	}
	now := s.nowMs()
	due, err := dueTime(p, now)
	if err != nil {
		s.c.rejectedIllegal.Add(1)
		return false, err
	}
	if due <= now {
		if _, ok := p[message.PropertyTimerDelUniqKey]; ok {
			s.c.rejectedIllegal.Add(1)
			return false, fmt.Errorf("%w: a timer delete message (TIMER_DEL_UNIQKEY) must have a time in the future, got %d, now is %d", ErrIllegal, due, now)
		}
		return false, nil
	}
	maxMs := s.maxDelaySec.Load() * 1000
	if due-now > maxMs {
		s.c.rejectedIllegal.Add(1)
		return false, fmt.Errorf("%w: the delivery time %d is %dms ahead, more than the max delay %dms (timerMaxDelaySec=%d)",
			ErrIllegal, due, due-now, maxMs, maxMs/1000)
	}
	if _, ok := p[message.PropertyTimerDelUniqKey]; ok {
		s.c.rejectedIllegal.Add(1)
		return false, fmt.Errorf("%w: cancelling a timer (TIMER_DEL_UNIQKEY) is not built in Spool", ErrIllegal)
	}
	if n, limit, reject := s.isReject(due); reject {
		s.c.rejectedFlow.Add(1)
		return false, fmt.Errorf("%w: the second of the delivery time %d already holds %d timers; max num limit is %d, and above %d new timers are refused at random (timerCongestNumEachSlot=%d)",
			ErrFlowControl, due, n, 2*limit, limit, limit)
	}
	p[message.PropertyTimerOutMS] = strconv.FormatInt(due, 10)
	p[message.PropertyRealTopic] = msg.Topic
	p[message.PropertyRealQueueID] = strconv.Itoa(int(msg.QueueID))
	msg.Topic = Topic
	msg.QueueID = 0
	msg.TagsCode = due
	msg.PropertiesString = message.EncodeProperties(p)
	s.c.scheduled.Add(1)
	return true, nil
}

// Schedule is Prepare followed, for a timer message, by
// Store.PutMessage(msg, done): the message is acknowledged when the store
// acknowledges its record in Topic. It returns (false, nil) when msg is
// not a timer message for the wheel (store it as usual; done is not
// called), (true, nil) when done will be called exactly once with the
// store's outcome, and (false, err) to refuse it (done is not called;
// answer ResponseCode(err) with remark err.Error()).
func (s *Service) Schedule(msg *message.Inner, done func(store.PutResult)) (bool, error) {
	ok, err := s.Prepare(msg)
	if !ok || err != nil {
		return false, err
	}
	s.st.PutMessage(msg, done)
	return true, nil
}

// HasTimerProperty reports whether one of TIMER_DELIVER_MS,
// TIMER_DELAY_SEC, TIMER_DELAY_MS is set.
func HasTimerProperty(p map[string]string) bool {
	for _, k := range timerProps {
		if _, ok := p[k]; ok {
			return true
		}
	}
	return false
}

// dueTime computes the delivery time as RocketMQ does: TIMER_DELAY_SEC
// first, then TIMER_DELAY_MS, then TIMER_DELIVER_MS (absolute).
func dueTime(p map[string]string, now int64) (int64, error) {
	parse := func(k string) (int64, error) {
		v, err := strconv.ParseInt(p[k], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s=%q is not a whole number", ErrIllegal, k, p[k])
		}
		return v, nil
	}
	const limit = int64(1) << 53
	if _, ok := p[message.PropertyTimerDelaySec]; ok {
		v, err := parse(message.PropertyTimerDelaySec)
		if err != nil {
			return 0, err
		}
		if v > limit/1000 || v < -limit/1000 {
			return 0, fmt.Errorf("%w: %s=%d is out of range", ErrIllegal, message.PropertyTimerDelaySec, v)
		}
		return now + v*1000, nil
	}
	if _, ok := p[message.PropertyTimerDelayMS]; ok {
		v, err := parse(message.PropertyTimerDelayMS)
		if err != nil {
			return 0, err
		}
		if v > limit || v < -limit {
			return 0, fmt.Errorf("%w: %s=%d is out of range", ErrIllegal, message.PropertyTimerDelayMS, v)
		}
		return now + v, nil
	}
	return parse(message.PropertyTimerDeliverMS)
}

// isReject applies timerCongestNumEachSlot as RocketMQ does: never below
// the limit, always at twice it, at random in between.
func (s *Service) isReject(due int64) (n, limit int64, reject bool) {
	limit = s.congest.Load()
	n = int64(s.counts[s.idx(due/1000)].Load())
	switch {
	case n <= limit:
		return n, limit, false
	case n >= 2*limit:
		return n, limit, true
	default:
		return n, limit, float64(rand.IntN(1000)) > 1000*float64(n-limit)/(float64(limit)+0.1)
	}
}

// placeLocked chooses the slot a timer due at due is linked into and
// whether it also goes to the loaded slot's ready heap or rolled list.
func (s *Service) placeLocked(due int64) (idx int64, ready, rolled bool) {
	sec := due / 1000
	if c := s.cur; c != nil {
		switch {
		case sec <= c.sec:
			return s.idx(c.sec), true, false
		case (sec-c.sec)%s.nslots == 0:
			return s.idx(c.sec), false, true
		}
		return s.idx(sec), false, false
	}
	if sec <= s.cursor {
		return s.idx(s.cursor), false, false
	}
	return s.idx(sec), false, false
}

// linkLocked appends entries for timers (due, phy, size) to the timer log
// and links them into their slots. On a write error nothing is linked.
func (s *Service) linkLocked(ts []slotEntry) error {
	if len(ts) == 0 {
		return nil
	}
	type undo struct{ idx, head int64 }
	undos := make([]undo, 0, len(ts))
	idxs := make([]int64, len(ts))
	buf := make([]byte, len(ts)*entrySize)
	pos0 := s.log.end.Load()
	for i, t := range ts {
		idx, _, _ := s.placeLocked(t.due)
		idxs[i] = idx
		undos = append(undos, undo{idx, s.heads[idx]})
		e := logEntry{size: t.size, prev: s.heads[idx], phy: t.phy, due: t.due}
		e.encode(buf[i*entrySize:])
		s.heads[idx] = pos0 + int64(i)*entrySize
	}
	if _, err := s.log.append(buf); err != nil {
		for i := len(undos) - 1; i >= 0; i-- {
			s.heads[undos[i].idx] = undos[i].head
		}
		return err
	}
	for i, t := range ts {
		pos := pos0 + int64(i)*entrySize
		s.counts[idxs[i]].Add(1)
		s.segLive[s.fileStart(pos)]++
		_, ready, rolled := s.placeLocked(t.due)
		if c := s.cur; c != nil && (ready || rolled) {
			c.refs[s.fileStart(pos)]++
			e := slotEntry{at: t.due, due: t.due, phy: t.phy, pos: pos, size: t.size}
			if rolled {
				c.rolled = append(c.rolled, e)
			} else if !s.skipLocked(e) {
				heap.Push(&c.ready, e)
				signal(s.wake)
			}
		}
	}
	return nil
}

// skipLocked reports (and forgets) a timer found delivered by the recovery
// scan.
func (s *Service) skipLocked(e slotEntry) bool {
	if d, ok := s.skip[e.phy]; ok && d == e.due {
		delete(s.skip, e.phy)
		s.c.skipped.Add(1)
		s.pending.Add(-1)
		return true
	}
	return false
}

// runEnqueue links the timer records of Topic's consume queue into the
// wheel, in queue order, within the read budget.
func (s *Service) runEnqueue() {
	defer s.wg.Done()
	budget := newReadBudget(s.readRate.Load)
	var batch []slotEntry
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.mu.Lock()
		off := s.enqOffset
		s.mu.Unlock()
		r := s.st.GetMessage(enqueueGroup, Topic, 0, off, enqueueBatch, 1<<20, nil)
		if r.Status != store.Found {
			next := r.NextBeginOffset
			r.Release()
			// Only ever move forward: going back would link timers twice.
			if next > off && (r.Status == store.OffsetTooSmall || r.Status == store.OffsetFoundNull) {
				s.mu.Lock()
				if s.enqOffset == off {
					s.enqOffset = next
				}
				s.mu.Unlock()
				continue
			}
			if r.Status == store.OffsetOverflowBadly {
				s.logger.Warn("timer: the timer topic's consume queue ends before the linked offset; waiting for it",
					"linked", off, "queueMax", next)
			}
			if !s.idle(s.enqWake, enqueueIdle) {
				return
			}
			continue
		}
		batch = batch[:0]
		nbytes := 0
		last := off
		for i, rec := range r.Buffers {
			last = r.QueueOffsets[i]
			nbytes += len(rec)
			h, err := message.ParseRecordHeader(rec)
			if err != nil {
				s.c.malformed.Add(1)
				s.logger.Error("timer: unreadable record in the timer topic skipped", "queueOffset", last, "err", err)
				continue
			}
			v, _ := h.Property(rec, message.PropertyTimerOutMS)
			due, err := strconv.ParseInt(v, 10, 64)
			if err != nil || due <= 0 {
				s.c.malformed.Add(1)
				s.logger.Error("timer: record without a valid TIMER_OUT_MS skipped", "queueOffset", last, "offset", h.PhysicalOffset, "value", v)
				continue
			}
			batch = append(batch, slotEntry{due: due, phy: h.PhysicalOffset, size: h.TotalSize})
		}
		r.Release()
		s.mu.Lock()
		s.pending.Add(int64(len(batch)))
		err := s.linkLocked(batch)
		if err != nil {
			s.pending.Add(-int64(len(batch)))
		} else {
			s.enqOffset = last + 1
			for _, t := range batch {
				s.enqPhyEnd = max(s.enqPhyEnd, t.phy+int64(t.size))
			}
		}
		s.mu.Unlock()
		signal(s.linked)
		if err != nil {
			s.logger.Error("timer: linking timers failed, will retry", "err", err)
			if !s.idle(nil, enqueueIdle) {
				return
			}
			continue
		}
		if !budget.take(nbytes, s.quit) {
			return
		}
	}
}

// idle waits for a signal on ch, d of real time, or quit (false).
func (s *Service) idle(ch chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.quit:
		return false
	case <-ch:
		return true
	case <-t.C:
		return true
	}
}

// runRecoverThenDeliver scans the CommitLog tail for delivery markers, then
// delivers.
func (s *Service) runRecoverThenDeliver() {
	defer s.wg.Done()
	s.mu.Lock()
	from := s.scanFrom
	s.mu.Unlock()
	to := s.st.MaxPhyOffset()
	found, ok := s.scanMarkers(from, to)
	if !ok {
		return
	}
	// Every timer record the queue held at Start is linked before the
	// first delivery: one linked later could be a delivered timer whose
	// marker is no longer remembered.
	for {
		s.mu.Lock()
		done := s.enqOffset >= s.replayTo
		s.mu.Unlock()
		if done {
			break
		}
		if !s.idle(s.linked, 100*time.Millisecond) {
			return
		}
	}
	s.mu.Lock()
	for phy, due := range found {
		s.skip[phy] = due
	}
	// The previous run delivered only from slots up to its clock's second
	// plus one, so once the cursor is past ours every marker found has
	// been matched or belongs to no pending timer.
	s.skipUntil = s.nowMs()/1000 + 1
	s.mu.Unlock()
	s.recovering.Store(false)
	s.runDelivery()
}

// scanMarkers reads the CommitLog from from to to and collects the timer
// records whose delivery is already stored (PropertyTimerSource).
func (s *Service) scanMarkers(from, to int64) (map[int64]int64, bool) {
	found := map[int64]int64{}
	off := max(from, s.st.MinPhyOffset())
	budget := newReadBudget(s.readRate.Load)
	for off < to {
		select {
		case <-s.quit:
			return nil, false
		default:
		}
		rec, err := s.st.LookMessageByOffset(off)
		var h message.RecordHeader
		if err == nil {
			h, err = message.ParseRecordHeader(rec)
		}
		if err != nil {
			if s.clSize <= 0 {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: recovery scan stopped early: CommitLog file size unknown", "offset", off, "err", err)
				break
			}
			if !errors.Is(err, store.ErrOffsetNotFound) {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: recovery scan skips the rest of a CommitLog file", "offset", off, "err", err)
			}
			off = (off/s.clSize + 1) * s.clSize
			continue
		}
		if v, ok := h.Property(rec, PropertyTimerSource); ok {
			phy, err1 := strconv.ParseInt(v, 10, 64)
			d, _ := h.Property(rec, message.PropertyTimerOutMS)
			due, err2 := strconv.ParseInt(d, 10, 64)
			if err1 == nil && err2 == nil {
				found[phy] = due
			}
		}
		off += int64(h.TotalSize)
		if !budget.take(len(rec), s.quit) {
			return nil, false
		}
	}
	return found, true
}

// ack is a delivery's outcome.
type ack struct {
	e   slotEntry
	res store.PutResult
}

// runDelivery is the wheel's hand: it loads the cursor's slot, delivers its
// timers in due order when their exact time has come, and moves on when
// the slot is empty and its second has begun.
func (s *Service) runDelivery() {
	window := s.cfg.DeliverWindow
	acks := make(chan ack, window)
	inflight := 0
	handle := func(a ack) {
		inflight--
		s.handleAck(a)
	}
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		s.mu.Lock()
		if s.cur == nil {
			s.cur = &loadedSlot{sec: s.cursor, headSnap: s.heads[s.idx(s.cursor)], refs: map[int64]int64{}}
		}
		c := s.cur
		s.mu.Unlock()
		if !c.walked {
			ents, err := s.walk(c.headSnap)
			if err != nil {
				s.c.corrupt.Add(1)
				s.logger.Error("timer: slot list cut short", "second", c.sec, "err", err)
			}
			s.mu.Lock()
			for _, w := range ents {
				c.refs[s.fileStart(w.pos)]++
				e := slotEntry{at: w.due, due: w.due, phy: w.phy, pos: w.pos, size: w.size}
				switch {
				case w.due/1000 > c.sec:
					c.rolled = append(c.rolled, e)
				case s.skipLocked(e):
				default:
					heap.Push(&c.ready, e)
				}
			}
			c.walked = true
			s.mu.Unlock()
		}
	drain:
		for inflight > 0 {
			select {
			case a := <-acks:
				handle(a)
			default:
				break drain
			}
		}
		now := s.nowMs()
		var batch []slotEntry
		s.mu.Lock()
		for inflight+len(batch) < window && c.ready.Len() > 0 && c.ready[0].at <= now {
			batch = append(batch, heap.Pop(&c.ready).(slotEntry))
		}
		next := int64(-1)
		if c.ready.Len() > 0 {
			next = c.ready[0].at
		}
		if len(batch) == 0 && next < 0 && inflight == 0 && now >= c.sec*1000 {
			err := s.finishSlotLocked()
			s.mu.Unlock()
			if err != nil {
				s.logger.Error("timer: re-linking rolled timers failed, will retry", "second", c.sec, "err", err)
				if !s.idle(nil, time.Second) {
					return
				}
			}
			continue
		}
		s.mu.Unlock()
		if len(batch) > 0 {
			for _, e := range batch {
				if s.deliverEntry(e, now, acks) {
					inflight++
				}
			}
			continue
		}
		if next < 0 && inflight == 0 {
			next = c.sec * 1000
		}
		var timer <-chan time.Time
		if next >= 0 && (inflight < window) {
			timer = s.clock.Alarm(time.UnixMilli(next))
		}
		select {
		case <-s.quit:
			return
		case <-s.wake:
		case a := <-acks:
			handle(a)
		case <-timer:
		}
	}
}

// walkedEntry is an entry read from a slot's list.
type walkedEntry struct {
	logEntry
	pos int64
}

// walk reads a slot's list from head.
func (s *Service) walk(head int64) ([]walkedEntry, error) {
	var out []walkedEntry
	limit := s.log.end.Load()/entrySize + 1
	for pos := head; pos != nilPos; {
		if int64(len(out)) > limit {
			return out, fmt.Errorf("%w: timer-log list from %d loops", ErrCorrupt, head)
		}
		e, err := s.log.read(pos)
		if err != nil {
			return out, err
		}
		out = append(out, walkedEntry{e, pos})
		pos = e.prev
	}
	return out, nil
}

// finishSlotLocked clears the delivered slot, re-links its later-round
// timers and moves the cursor to the next second.
func (s *Service) finishSlotLocked() error {
	c := s.cur
	idx := s.idx(c.sec)
	oldHead, oldCount := s.heads[idx], s.counts[idx].Load()
	s.heads[idx] = nilPos
	s.counts[idx].Store(0)
	s.cur = nil
	s.cursor = c.sec + 1
	if len(c.rolled) > 0 {
		if err := s.linkLocked(c.rolled); err != nil {
			s.cursor = c.sec
			s.cur = c
			s.heads[idx] = oldHead
			s.counts[idx].Store(oldCount)
			return err
		}
		s.c.rolled.Add(int64(len(c.rolled)))
	}
	for start, n := range c.refs {
		s.segLive[start] -= n
	}
	// scanFrom may move past the markers found at recovery only when none
	// of them can still match a pending timer: a checkpoint written before
	// would make the next recovery miss them.
	if len(s.skip) > 0 && s.cursor <= s.skipUntil {
		return nil
	}
	if len(s.skip) > 0 {
		s.logger.Info("timer: delivery markers matching no pending timer dropped", "count", len(s.skip))
		clear(s.skip)
	}
	s.scanFrom = s.st.MaxPhyOffset()
	return nil
}

// deliverEntry reads the timer record of e and hands the real message to
// the deliver function; it reports whether an ack will come.
func (s *Service) deliverEntry(e slotEntry, now int64, acks chan<- ack) bool {
	rec, err := s.st.LookMessageByOffset(e.phy)
	if err != nil {
		if errors.Is(err, store.ErrOffsetNotFound) || errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrFileGone) {
			s.countLost(e, err)
			return false
		}
		s.retry(e, now, err.Error())
		return false
	}
	ext, err := message.DecodeRecord(rec)
	if err != nil || ext.Topic != Topic || ext.PhysicalOffset != e.phy || ext.Properties[message.PropertyTimerOutMS] != strconv.FormatInt(e.due, 10) {
		if err == nil {
			err = fmt.Errorf("record at %d is not the timer record due at %d (topic %s)", e.phy, e.due, ext.Topic)
		}
		s.countLost(e, err)
		return false
	}
	m, err := realMessage(ext, e.phy)
	if err != nil {
		s.c.dropped.Add(1)
		s.pending.Add(-1)
		s.logger.Error("timer: timer record dropped", "offset", e.phy, "err", err)
		return false
	}
	s.deliver(m, func(r store.PutResult) { acks <- ack{e, r} })
	return true
}

// countLost counts a timer whose record is gone (CommitLog retention, or a
// tail lost with the store's own acknowledgement).
func (s *Service) countLost(e slotEntry, err error) {
	s.c.lost.Add(1)
	s.pending.Add(-1)
	s.logger.Error("timer: timer record not found, timer lost", "offset", e.phy, "due", e.due, "err", err)
}

// retry puts e back to act again after retryDelayMs.
func (s *Service) retry(e slotEntry, now int64, why string) {
	s.c.retries.Add(1)
	s.logger.Warn("timer: delivery failed, will retry", "offset", e.phy, "due", e.due, "why", why)
	e.at = now + retryDelayMs
	s.mu.Lock()
	heap.Push(&s.cur.ready, e)
	s.mu.Unlock()
}

func (s *Service) handleAck(a ack) {
	switch a.res.Status {
	case store.PutOK, store.FlushDiskTimeout, store.FlushSlaveTimeout, store.SlaveNotAvailable:
		now := s.nowMs()
		s.c.delivered.Add(1)
		s.pending.Add(-1)
		s.lateness.Record(time.Duration(now-a.e.due) * time.Millisecond)
	case store.MessageIllegal, store.PropertiesSizeExceeded:
		s.c.dropped.Add(1)
		s.pending.Add(-1)
		s.logger.Error("timer: due message refused by the store, dropped", "offset", a.e.phy, "status", int(a.res.Status), "remark", a.res.Remark)
	default:
		s.retry(a.e, s.nowMs(), a.res.Remark)
	}
}

// realMessage rebuilds the message to deliver from its timer record.
func realMessage(ext *message.Ext, phy int64) (*message.Inner, error) {
	m := ext.ToInner()
	p := m.Properties
	topic := p[message.PropertyRealTopic]
	qid, err := strconv.Atoi(p[message.PropertyRealQueueID])
	if topic == "" || err != nil {
		return nil, fmt.Errorf("timer record at %d lacks REAL_TOPIC/REAL_QID", phy)
	}
	for _, k := range [...]string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerEnqueueMS,
		message.PropertyTimerDequeueMS, message.PropertyTimerRollTimes} {
		delete(p, k)
	}
	p[PropertyTimerSource] = strconv.FormatInt(phy, 10)
	p[message.PropertyWaitStoreMsgOK] = "false"
	m.Topic = topic
	m.QueueID = int32(qid)
	m.StoreTimestamp = 0
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
	m.PropertiesString = message.EncodeProperties(p)
	return m, nil
}

// runCheckpoints writes a checkpoint every FlushIntervalMs of real time.
func (s *Service) runCheckpoints() {
	defer s.wg.Done()
	t := time.NewTicker(time.Duration(s.cfg.FlushIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			if err := s.Checkpoint(); err != nil {
				s.logger.Error("timer: checkpoint failed", "err", err)
			}
		}
	}
}

// Checkpoint syncs the timer log and replaces the wheel file with a
// consistent image of the wheel, once the CommitLog is flushed past every
// delivery and timer record the image counts as done. A failed sync stops
// all later checkpoints (recovery then starts from the last good one).
func (s *Service) Checkpoint() error { return s.checkpoint(s.flushWait) }

// checkpoint waits at most wait for the CommitLog flush.
func (s *Service) checkpoint(wait time.Duration) error {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	if p := s.ckErr.Load(); p != nil {
		return fmt.Errorf("timer: checkpoints stopped after an earlier failure: %s", *p)
	}
	if s.log == nil {
		return nil
	}
	s.mu.Lock()
	img := &wheelImage{slots: uint32(s.nslots), cursor: s.cursor, scanFrom: s.scanFrom, enqOffset: s.enqOffset,
		logEnd: s.log.end.Load(), savedAtMs: time.Now().UnixMilli()}
	need := max(s.scanFrom, s.enqPhyEnd)
	var dead []int64
	for start, live := range s.segLive {
		if live > 0 {
			img.segs = append(img.segs, segImage{start: start, live: live})
		} else if start+s.cfg.LogFileSize <= img.logEnd {
			dead = append(dead, start)
		}
	}
	for i, h := range s.heads {
		if h != nilPos {
			img.heads = append(img.heads, slotImage{index: uint32(i), count: uint32(s.counts[i].Load()), head: h})
		}
	}
	s.mu.Unlock()
	fail := func(err error) error {
		msg := err.Error()
		s.ckErr.Store(&msg)
		return err
	}
	if err := s.log.sync(); err != nil {
		return fail(err)
	}
	if !s.waitFlushed(need, wait) {
		return nil // try again next time; nothing is lost by waiting
	}
	if err := saveWheelImage(s.fs, s.wheelPath, img.encode()); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			// A full disk passes: the last image stays valid and the
			// next checkpoint tries again (only a failed sync is final).
			s.ckNoSpace.Add(1)
			return err
		}
		return fail(err)
	}
	s.c.checkpoints.Add(1)
	s.ckLast.Store(img.savedAtMs)
	for _, start := range dead {
		s.mu.Lock()
		gone := s.segLive[start] <= 0
		if gone {
			delete(s.segLive, start)
		}
		s.mu.Unlock()
		if gone {
			if err := s.log.remove(start); err != nil {
				s.logger.Warn("timer: removing a delivered timer-log file failed", "err", err)
			}
		}
	}
	return nil
}

// waitFlushed waits (real time, at most wait) until the CommitLog is
// flushed to at least off.
func (s *Service) waitFlushed(off int64, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		st := s.st.Stats()
		if st.CommitLogFlushed >= off || st.CommitLogMax < off {
			return st.CommitLogFlushed >= off
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(flushWaitPoll)
	}
}

// Close stops the service and writes a last checkpoint.
func (s *Service) Close() error {
	var err error
	s.closed.Do(func() {
		if s.state.Swap(stateClosed) != stateRunning {
			return
		}
		close(s.quit)
		s.wg.Wait()
		err = s.checkpoint(min(s.flushWait, closeFlushWait))
		err = errors.Join(err, s.log.close())
	})
	return err
}

// kill stops the service as a crash would: no checkpoint, files closed
// without syncing (tests).
func (s *Service) kill() {
	s.closed.Do(func() {
		if s.state.Swap(stateClosed) != stateRunning {
			return
		}
		close(s.quit)
		s.wg.Wait()
		s.log.close()
	})
}
