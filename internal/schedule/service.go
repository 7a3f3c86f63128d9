package schedule

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

const (
	// scheduleGroup names the schedule service's reads in store statistics.
	scheduleGroup = "SCHEDULE_CONSUMER"
	// scheduleIdle is the longest a level waits before looking again when
	// it has nothing to deliver (dispatches wake it earlier).
	scheduleIdle = time.Second
	// scheduleRetry is the pause after a failed delivery.
	scheduleRetry = time.Second
	// scheduleFlushInterval is how often changed progress is persisted;
	// it bounds the CommitLog a recovery scan reads after a crash.
	scheduleFlushInterval = time.Second
	// scheduleRecoveryBytesPerSecond budgets the recovery scan.
	scheduleRecoveryBytesPerSecond = 64 << 20

	// markNoFile: no delayOffset.json (scan the whole CommitLog when the
	// schedule queues hold anything); markLegacy: a file without
	// commitLogOffset (RocketMQ's form: trusted as it is).
	markNoFile = -1
	markLegacy = -2

	// propertyDelaySource marks a delivered message with the schedule
	// queue entry it came from, "<level>:<queue offset>", so progress can
	// be recomputed from the CommitLog after a crash.
	PropertyDelaySource = "__DELAY_SRC"
)

// DelayOffsetFile is config/delayOffset.json: delay level -> next offset of
// its SCHEDULE_TOPIC_XXXX queue, and (Spool's addition) the CommitLog
// offset up to which the table accounts for every delivery.
type DelayOffsetFile struct {
	OffsetTable     map[string]int64 `json:"offsetTable"`
	CommitLogOffset *int64           `json:"commitLogOffset,omitempty"`
}

// Service delivers delayed messages: one goroutine per delay level
// reads its SCHEDULE_TOPIC_XXXX queue in order and, when an entry is due
// (store time + level delay, never earlier), stores the message again in
// REAL_TOPIC / REAL_QID without DELAY and with __DELAY_SRC=<level>:<offset>.
//
// Progress per level is persisted to delayOffset.json at most every
// second together with the CommitLog offset it is valid up to: every
// delivery not counted in the table lies at or after that offset. After a
// crash the start-up scan reads the CommitLog from there to its end and
// takes, per level, the highest delivered offset from the markers, so a
// kill -9 neither redelivers nor loses a delayed message.
type Service struct {
	d    Deps
	File *metadata.File

	mu        sync.Mutex
	offsets   map[int]int64 // level -> next offset
	inflight  map[int]int64 // level -> CommitLog end before its delivery put
	validUpTo int64         // loaded mark; markNoFile or markLegacy when there is none
	dirty     bool
	// recoveredAll is set once the start-up scan has applied the markers.
	recoveredAll bool
	Recovered    atomic.Int64 // markers applied by the last recovery scan

	wake []chan struct{} // per level, capacity 1
	// runMu serializes Start and Stop; running is true between them. The
	// service starts again after a Stop (a broker that is master again).
	runMu   sync.Mutex
	running bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

func NewService(d Deps) *Service {
	s := &Service{d: d, offsets: make(map[int]int64), inflight: make(map[int]int64), validUpTo: markNoFile,
		quit: make(chan struct{})}
	s.File = metadata.NewFile(d.Path, s.encode, d.Logger)
	s.wake = make([]chan struct{}, len(d.DelayLevels))
	for i := range s.wake {
		s.wake[i] = make(chan struct{}, 1)
	}
	return s
}

func (s *Service) Load() error {
	b, err := s.File.Load()
	if err != nil || b == nil {
		return err
	}
	var doc DelayOffsetFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%w: decode %s: %w", metadata.ErrMetadata, s.File.Path, corrupt.Wrap(err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validUpTo = markLegacy
	if doc.CommitLogOffset != nil {
		s.validUpTo = *doc.CommitLogOffset
	}
	for k, v := range doc.OffsetTable {
		level, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("%w: %s: level %q: %w", metadata.ErrMetadata, s.File.Path, k, corrupt.Wrap(err))
		}
		s.offsets[level] = v
	}
	return nil
}

// encode snapshots the table. Its CommitLog mark is the log's end, or
// the end before a delivery still in flight if lower: a delivery missing
// from the table is in flight or not yet started, so its record lies at
// or after the mark.
func (s *Service) encode() ([]byte, error) {
	s.mu.Lock()
	mark := s.d.Store().MaxPhyOffset()
	for _, v := range s.inflight {
		mark = min(mark, v)
	}
	markp := &mark
	if !s.recoveredAll {
		// Stopped before the recovery scan ended: keep the loaded mark, so
		// the next start scans the same range.
		switch s.validUpTo {
		case markLegacy:
			markp = nil
		case markNoFile:
			mark = s.d.Store().MinPhyOffset()
		default:
			mark = s.validUpTo
		}
	}
	doc := DelayOffsetFile{OffsetTable: make(map[string]int64, len(s.offsets)), CommitLogOffset: markp}
	for k, v := range s.offsets {
		doc.OffsetTable[strconv.Itoa(k)] = v
	}
	s.mu.Unlock()
	return json.MarshalIndent(&doc, "", "\t")
}

// Encode is the table in delayOffset.json's form (the
// GET_ALL_DELAY_OFFSET answer body).
func (s *Service) Encode() ([]byte, error) { return s.encode() }

// ClampTo lowers every level's next offset above its queue's end (level
// L is queue L-1 of the schedule topic) to that end and reports whether
// anything changed: after a replica cut its log for a role change, the
// delivery progress never points past what the queue holds.
func (s *Service) ClampTo(maxOffset func(queueID int32) int64) bool {
	s.mu.Lock()
	changed := false
	for level, off := range s.offsets {
		if max := maxOffset(int32(level - 1)); off > max {
			s.offsets[level] = max
			changed = true
		}
	}
	if changed {
		s.dirty = true
	}
	s.mu.Unlock()
	if changed {
		s.File.MarkDirty()
	}
	return changed
}

// Adopt takes a master's delay offsets into a slave's table: a level's
// offset only moves forward. It reports whether anything changed.
func (s *Service) Adopt(table map[int]int64) bool {
	s.mu.Lock()
	changed := false
	for level, off := range table {
		if off > s.offsets[level] {
			s.offsets[level] = off
			changed = true
		}
	}
	s.mu.Unlock()
	if changed {
		s.File.MarkDirty()
	}
	return changed
}

func (s *Service) Offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

func (s *Service) setOffset(level int, off int64) {
	s.mu.Lock()
	s.offsets[level] = off
	delete(s.inflight, level)
	s.dirty = true
	s.mu.Unlock()
}

// beginDelivery records that level is about to put a delivery.
func (s *Service) beginDelivery(level int) {
	s.mu.Lock()
	s.inflight[level] = s.d.Store().MaxPhyOffset()
	s.mu.Unlock()
}

// abortDelivery forgets a delivery whose put failed.
func (s *Service) abortDelivery(level int) {
	s.mu.Lock()
	delete(s.inflight, level)
	s.mu.Unlock()
}

// Start recovers the progress from the CommitLog, then starts one
// goroutine per level and the periodic persister. Starting a running
// service does nothing; a stopped one starts again, recovering from the
// CommitLog offset it stopped at (lowered by any truncation since, see
// Truncated), so the deliveries another master made meanwhile are not
// made again.
func (s *Service) Start() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.running {
		return
	}
	s.running = true
	s.quit = make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.recover() {
			return
		}
		s.mu.Lock()
		s.recoveredAll = true
		s.mu.Unlock()
		s.File.MarkDirty()
		for i := range s.d.DelayLevels {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.runLevel(i + 1)
			}()
		}
		s.persistLoop()
	}()
}

// persistLoop asks for a write of delayOffset.json when progress changed.
func (s *Service) persistLoop() {
	t := time.NewTicker(scheduleFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.mu.Lock()
		dirty := s.dirty
		s.dirty = false
		s.mu.Unlock()
		if dirty {
			s.File.MarkDirty()
		}
	}
}

// recover scans the CommitLog from the persisted mark to its end and
// advances each level past the highest offset a delivered record names.
// It reports false when stopped first.
func (s *Service) recover() bool {
	st := s.d.Store()
	// The markers are checked against the schedule queues, so let the
	// store dispatch what its recovery found first.
	if !WaitStoreDispatch(st, s.quit) {
		return false
	}
	s.mu.Lock()
	from := s.validUpTo
	s.mu.Unlock()
	switch from {
	case markLegacy:
		return true
	case markNoFile:
		empty := true
		for q := range s.d.DelayLevels {
			if st.MaxOffsetInQueue(s.d.Topic, int32(q)) > 0 {
				empty = false
			}
		}
		if empty {
			return true
		}
	}
	end := st.MaxPhyOffset()
	from = max(from, st.MinPhyOffset())
	if from >= end {
		return true
	}
	budget := s.d.RecoveryBudget()
	rates := func() (int64, int64) { return 0, scheduleRecoveryBytesPerSecond }
	fileSize := s.d.StoreConfig().MappedFileSizeCommitLog
	found := map[int]int64{}
	var records, bytes int64
	for off := from; off < end; {
		if !budget.Wait(0, rates, s.quit) {
			return false
		}
		rec, err := st.LookMessageByOffset(off)
		if err != nil {
			// The blank end of a CommitLog file: go on with the next file.
			if fileSize <= 0 {
				break
			}
			next := (off/fileSize + 1) * fileSize
			if next < end {
				s.d.Logger.Debug("schedule recovery: no record, skipping to the next file", "offset", off, "err", err)
			}
			off = next
			continue
		}
		budget.Charge(int64(len(rec)), 0, scheduleRecoveryBytesPerSecond)
		records++
		bytes += int64(len(rec))
		off += int64(len(rec))
		h, err := message.ParseRecordHeader(rec)
		if err != nil || h.Topic == s.d.Topic || h.PropertiesLen == 0 {
			continue
		}
		props := message.DecodeProperties(string(rec[h.PropertiesOffset : h.PropertiesOffset+h.PropertiesLen]))
		level, qoff, ok := parseDelaySource(props[PropertyDelaySource])
		if !ok || level < 1 || level > len(s.d.DelayLevels) {
			continue
		}
		// A marker can only name an entry that exists.
		if qoff >= st.MaxOffsetInQueue(s.d.Topic, int32(level-1)) {
			continue
		}
		if v, seen := found[level]; !seen || qoff+1 > v {
			found[level] = qoff + 1
		}
	}
	s.mu.Lock()
	var applied int64
	for level, next := range found {
		if next > s.offsets[level] {
			s.offsets[level] = next
			applied++
		}
	}
	s.mu.Unlock()
	s.Recovered.Store(applied)
	s.d.Logger.Info("schedule progress recovered from the CommitLog", "from", from, "to", end,
		"records", records, "bytes", bytes, "levelsAdvanced", applied)
	return true
}

// storeDispatchWait bounds how long a start-up scan waits for the store to
// dispatch what its recovery found.
const storeDispatchWait = 30 * time.Second

// WaitStoreDispatch waits until the consume queues cover the CommitLog as
// it was when called (at most storeDispatchWait); false when quit closes.
func WaitStoreDispatch(st store.MessageStore, quit <-chan struct{}) bool {
	target := st.MaxPhyOffset()
	deadline := time.Now().Add(storeDispatchWait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for st.MaxPhyOffset()-st.DispatchBehindBytes() < target && time.Now().Before(deadline) {
		select {
		case <-quit:
			return false
		case <-tick.C:
		}
	}
	return true
}

// parseDelaySource parses a __DELAY_SRC value "<level>:<offset>".
func parseDelaySource(v string) (int, int64, bool) {
	ls, offs, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, false
	}
	level, err1 := strconv.Atoi(ls)
	off, err2 := strconv.ParseInt(offs, 10, 64)
	if err1 != nil || err2 != nil || off < 0 {
		return 0, 0, false
	}
	return level, off, true
}

// Stop ends the deliveries and waits for them. The progress is then
// valid up to the CommitLog end before any delivery still in flight:
// the next Start (or a restart of the process, from delayOffset.json)
// scans the CommitLog from there for deliveries made after it. Stopping
// a service that does not run does nothing.
func (s *Service) Stop() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if !s.running {
		return
	}
	s.running = false
	close(s.quit)
	s.wg.Wait()
	s.mu.Lock()
	if s.recoveredAll {
		mark := s.d.Store().MaxPhyOffset()
		for _, v := range s.inflight {
			mark = min(mark, v)
		}
		s.validUpTo, s.recoveredAll = mark, false
	}
	clear(s.inflight)
	s.mu.Unlock()
	s.File.MarkDirty()
}

// Truncated lowers the CommitLog offset the progress is valid up to when
// the log was cut at phy (a role change): the records past the cut are
// replaced by another master's, whose deliveries the next Start's scan
// must read. A running service's mark is the log's end, already below
// the cut.
func (s *Service) Truncated(phy int64) {
	s.mu.Lock()
	changed := s.validUpTo > phy
	if changed {
		s.validUpTo = phy
	}
	s.mu.Unlock()
	if changed {
		s.File.MarkDirty()
	}
}

// OnDispatch wakes the level whose schedule queue received a message.
func (s *Service) OnDispatch(queueID int32) {
	if int(queueID) < len(s.wake) && queueID >= 0 {
		select {
		case s.wake[queueID] <- struct{}{}:
		default:
		}
	}
}

// sleep waits d, a wake-up of level, or stop; it reports false on stop.
func (s *Service) sleep(level int, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.quit:
		return false
	case <-s.wake[level-1]:
		return true
	case <-t.C:
		return true
	}
}

func (s *Service) runLevel(level int) {
	delay := s.d.DelayLevels[level-1]
	qid := int32(level - 1)
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		off := s.Offset(level)
		res := s.d.Store().GetMessage(scheduleGroup, s.d.Topic, qid, off, 32, math.MaxInt32, nil)
		if res == nil {
			if !s.sleep(level, scheduleIdle) {
				return
			}
			continue
		}
		if res.Status != store.Found {
			next := res.NextBeginOffset
			res.Release()
			if next != off && (res.Status == store.OffsetTooSmall || res.Status == store.OffsetFoundNull ||
				res.Status == store.OffsetOverflowBadly) {
				s.setOffset(level, next)
				continue
			}
			if !s.sleep(level, scheduleIdle) {
				return
			}
			continue
		}
		wait, ok := s.deliverBatch(level, delay, res)
		res.Release()
		if !ok {
			return
		}
		if wait > 0 && !s.sleep(level, wait) {
			return
		}
	}
}

// deliverBatch delivers the due records of res in order. It returns how
// long to wait before the next look (0 = at once) and false on stop.
func (s *Service) deliverBatch(level int, delay time.Duration, res *store.GetResult) (time.Duration, bool) {
	for i, rec := range res.Buffers {
		qoff := res.QueueOffsets[i]
		ext, err := message.DecodeRecord(rec)
		if err != nil {
			s.d.Logger.Error("schedule: undecodable record skipped", "level", level, "offset", qoff, "err", err)
			s.setOffset(level, qoff+1)
			continue
		}
		due := time.UnixMilli(ext.StoreTimestamp).Add(delay)
		if d := time.Until(due); d > 0 {
			return min(d, scheduleIdle), true
		}
		m, err := scheduledToReal(ext, level, qoff)
		if err != nil {
			s.d.Logger.Error("schedule: record skipped", "level", level, "offset", qoff, "err", err)
			s.setOffset(level, qoff+1)
			continue
		}
		done := make(chan store.PutResult, 1)
		s.beginDelivery(level)
		s.d.Store().PutMessage(m, func(r store.PutResult) { done <- r })
		var r store.PutResult
		select {
		case r = <-done:
		case <-s.quit:
			return 0, false
		}
		s.d.CountPut(m.Topic, r)
		if r.Status != store.PutOK && r.Status != store.FlushDiskTimeout {
			s.abortDelivery(level)
			s.d.Logger.Warn("schedule: delivery failed, will retry", "level", level, "offset", qoff,
				"topic", m.Topic, "status", int(r.Status), "remark", r.Remark)
			return scheduleRetry, true
		}
		s.setOffset(level, qoff+1)
	}
	return 0, true
}

// scheduledToReal builds the message to deliver from the schedule record
// at offset qoff of level's queue.
func scheduledToReal(ext *message.Ext, level int, qoff int64) (*message.Inner, error) {
	m := ext.ToInner()
	p := m.Properties
	topic := p[message.PropertyRealTopic]
	qid, err := strconv.Atoi(p[message.PropertyRealQueueID])
	if topic == "" || err != nil {
		return nil, fmt.Errorf("schedule record at %d lacks REAL_TOPIC/REAL_QID", ext.PhysicalOffset)
	}
	delete(p, message.PropertyDelayTimeLevel)
	for _, k := range []string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		delete(p, k)
	}
	p[message.PropertyWaitStoreMsgOK] = "false"
	p[PropertyDelaySource] = strconv.Itoa(level) + ":" + strconv.FormatInt(qoff, 10)
	m.Topic = topic
	m.QueueID = int32(qid)
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
	m.PropertiesString = message.EncodeProperties(p)
	return m, nil
}

// RunningStats adds RocketMQ's scheduleMessageOffset_<level> figures: for
// every delay level with an offset, "<next offset to deliver>,<max offset of
// the level's queue>".
func (s *Service) RunningStats(t map[string]string) {
	s.mu.Lock()
	offs := make(map[int]int64, len(s.offsets))
	for level, off := range s.offsets {
		offs[level] = off
	}
	s.mu.Unlock()
	for level, off := range offs {
		maxOff := s.d.Store().MaxOffsetInQueue(s.d.Topic, int32(level-1))
		t["scheduleMessageOffset_"+strconv.Itoa(level)] = strconv.FormatInt(off, 10) + "," + strconv.FormatInt(maxOff, 10)
	}
}
