package timer

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/store/stats"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

const (
	// Topic is the system topic that holds accepted timer messages
	// (RocketMQ's TimerMessageStore.TIMER_TOPIC), queue 0.
	Topic = systopic.WheelTimer
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
	clock     clock.Clock
	logger    *slog.Logger
	deliver   DeliverFunc
	wheelPath string
	clSize    int64

	maxDelaySec atomic.Int64
	congest     atomic.Int64
	readRate    atomic.Int64
	state       atomic.Int32

	log *TimerLog

	// mu guards w, the wheel's state and decisions (wheel.go); the
	// drivers around it (enqueue.go, deliver.go, checkpoint.go) do the I/O.
	mu sync.Mutex
	w  *wheel

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
	ckWire    atomic.Pointer[WireCheckpoint] // the last checkpoint, for GET_TIMER_CHECK_POINT

	// doneBefore is set once by Start from a master's copied checkpoint:
	// timers due before this second were delivered by that master, so
	// linking skips them (0: none).
	doneBefore int64

	// cancels holds, per due second, the keys of the delete markers
	// linked or walked and not yet finished (guarded by mu; cancel.go).
	cancels map[int64]map[string]struct{}

	topics topicCounts // metrics.go

	recovering atomic.Bool
	pending    atomic.Int64
	c          counters
	lateness   stats.Histogram
}

type counters struct {
	scheduled, delivered, rejectedIllegal, rejectedFlow, lost, dropped, retries,
	rolled, skipped, malformed, corrupt, checkpoints, cancelled, markers, truncated atomic.Int64
}

// New checks the configuration. Start opens the files and recovers.
func New(cfg Config, st Store) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, st: st, fs: cfg.FS, clock: cfg.Clock, logger: cfg.Logger, deliver: cfg.Deliver,
		wheelPath: filepath.Join(cfg.StorePathRootDir, "timerwheel"), clSize: cfg.CommitLogFileSize,
		wake: make(chan struct{}, 1), enqWake: make(chan struct{}, 1), linked: make(chan struct{}, 1),
		quit: make(chan struct{}), flushWait: flushWaitMax, cancels: map[int64]map[string]struct{}{}}
	if s.fs == nil {
		s.fs = vfs.Default
	}
	if s.clock == nil {
		s.clock = clock.Real()
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
	// The store keeps its callbacks for good: this one holds only the
	// wake-up channel, not the service (a broker opens a new wheel each
	// time it becomes master again).
	wake := s.enqWake
	s.st.OnDispatch(func(topic string, _ int32, _ int64) {
		if topic == Topic {
			signal(wake)
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
	fresh := img == nil
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
		if ck := s.cfg.MasterCheckpoint; ck != nil && ck.HasScanFrom && ck.ScanFrom <= s.st.MaxPhyOffset() && ck.LastReadTimeMs > 0 {
			// A promoted slave: its master had delivered every timer due
			// before the copied cursor, and every such delivery lies
			// before ScanFrom, which this CommitLog holds.
			img.cursor, img.scanFrom = ck.LastReadTimeMs/1000, max(ck.ScanFrom, s.st.MinPhyOffset())
			s.doneBefore = img.cursor
			s.logger.Info("timer: no wheel file; starting from the master's copied checkpoint",
				"cursorSec", img.cursor, "scanFrom", img.scanFrom)
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
	w, pending := newWheel(img, s.cfg.LogFileSize)
	s.pending.Store(pending)
	if r := s.st.GetMessage(enqueueGroup, Topic, 0, img.enqOffset, 1, 1, nil); r != nil {
		w.replayTo = r.MaxOffset
		r.Release()
	}
	if err := s.recoverCuts(w, img, fresh); err != nil {
		return err
	}
	s.log.end.Store(img.logEnd)
	// Files past the checkpoint's end, and files the checkpoint no longer
	// references, hold nothing reachable.
	existing, err := s.log.existing()
	if err != nil {
		return err
	}
	for _, start := range w.staleFiles(existing, img.logEnd) {
		if err := s.log.remove(start); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
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

// isReject applies timerCongestNumEachSlot to the slot of due.
func (s *Service) isReject(due int64) (n, limit int64, reject bool) {
	limit = s.congest.Load()
	n = s.w.slotCount(due)
	return n, limit, congested(n, limit, func() int { return rand.IntN(1000) })
}
