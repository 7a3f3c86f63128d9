package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

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
)

// delayOffsetFile is config/delayOffset.json: delay level -> next offset of
// its SCHEDULE_TOPIC_XXXX queue.
type delayOffsetFile struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
}

// scheduleService delivers delayed messages: one goroutine per delay level
// reads its SCHEDULE_TOPIC_XXXX queue in order and, when an entry is due
// (store time + level delay), stores the message again in REAL_TOPIC /
// REAL_QID without DELAY. Progress per level is persisted to
// delayOffset.json.
type scheduleService struct {
	b    *Broker
	file *metadataFile

	mu      sync.Mutex
	offsets map[int]int64 // level -> next offset

	wake    []chan struct{} // per level, capacity 1
	quit    chan struct{}
	wg      sync.WaitGroup
	stopped sync.Once
}

func newScheduleService(b *Broker, path string) *scheduleService {
	s := &scheduleService{b: b, offsets: make(map[int]int64), quit: make(chan struct{})}
	s.file = newMetadataFile(path, s.encode, b.logger)
	s.wake = make([]chan struct{}, len(b.delayLevels))
	for i := range s.wake {
		s.wake[i] = make(chan struct{}, 1)
	}
	return s
}

func (s *scheduleService) load() error {
	b, err := s.file.load()
	if err != nil || b == nil {
		return err
	}
	var doc delayOffsetFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrMetadata, s.file.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range doc.OffsetTable {
		level, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("%w: %s: level %q: %w", ErrMetadata, s.file.path, k, err)
		}
		s.offsets[level] = v
	}
	return nil
}

func (s *scheduleService) encode() ([]byte, error) {
	s.mu.Lock()
	doc := delayOffsetFile{OffsetTable: make(map[string]int64, len(s.offsets))}
	for k, v := range s.offsets {
		doc.OffsetTable[strconv.Itoa(k)] = v
	}
	s.mu.Unlock()
	return json.MarshalIndent(&doc, "", "\t")
}

func (s *scheduleService) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

func (s *scheduleService) setOffset(level int, off int64) {
	s.mu.Lock()
	s.offsets[level] = off
	s.mu.Unlock()
	s.file.markDirty()
}

func (s *scheduleService) start() {
	for i := range s.b.delayLevels {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runLevel(i + 1)
		}()
	}
}

func (s *scheduleService) stop() {
	s.stopped.Do(func() { close(s.quit) })
	s.wg.Wait()
}

// onDispatch wakes the level whose schedule queue received a message.
func (s *scheduleService) onDispatch(queueID int32) {
	if int(queueID) < len(s.wake) && queueID >= 0 {
		select {
		case s.wake[queueID] <- struct{}{}:
		default:
		}
	}
}

// sleep waits d, a wake-up of level, or stop; it reports false on stop.
func (s *scheduleService) sleep(level int, d time.Duration) bool {
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

func (s *scheduleService) runLevel(level int) {
	delay := s.b.delayLevels[level-1]
	qid := int32(level - 1)
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		off := s.offset(level)
		res := s.b.store.GetMessage(scheduleGroup, topicSchedule, qid, off, 32, math.MaxInt32, nil)
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
func (s *scheduleService) deliverBatch(level int, delay time.Duration, res *store.GetResult) (time.Duration, bool) {
	for i, rec := range res.Buffers {
		qoff := res.QueueOffsets[i]
		ext, err := message.DecodeRecord(rec)
		if err != nil {
			s.b.logger.Error("schedule: undecodable record skipped", "level", level, "offset", qoff, "err", err)
			s.setOffset(level, qoff+1)
			continue
		}
		due := time.UnixMilli(ext.StoreTimestamp).Add(delay)
		if d := time.Until(due); d > 0 {
			return min(d, scheduleIdle), true
		}
		m, err := scheduledToReal(ext)
		if err != nil {
			s.b.logger.Error("schedule: record skipped", "level", level, "offset", qoff, "err", err)
			s.setOffset(level, qoff+1)
			continue
		}
		done := make(chan store.PutResult, 1)
		s.b.store.PutMessage(m, func(r store.PutResult) { done <- r })
		var r store.PutResult
		select {
		case r = <-done:
		case <-s.quit:
			return 0, false
		}
		s.b.stats.countPut(m.Topic, r)
		if r.Status != store.PutOK && r.Status != store.FlushDiskTimeout {
			s.b.logger.Warn("schedule: delivery failed, will retry", "level", level, "offset", qoff,
				"topic", m.Topic, "status", int(r.Status), "remark", r.Remark)
			return scheduleRetry, true
		}
		s.setOffset(level, qoff+1)
	}
	return 0, true
}

// scheduledToReal builds the message to deliver from a schedule record.
func scheduledToReal(ext *message.Ext) (*message.Inner, error) {
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
	m.Topic = topic
	m.QueueID = int32(qid)
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
	m.PropertiesString = message.EncodeProperties(p)
	return m, nil
}
