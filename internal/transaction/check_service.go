package transaction

import (
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const (
	// checkGroup keeps the check service's floors in the consumer offset
	// table (RocketMQ's CID_RMQ_SYS_TRANS).
	checkGroup = systopic.TransGroup
	// Op record tags: "d" = the half is resolved (commit, rollback or
	// given up), "c" = one check was sent.
	opDone  = "d"
	opCheck = "c"
	// opBatch is the most check attempts one "c" op record carries.
	opBatch = 256
)

// Stats are the transaction check service's counters.
type Stats struct {
	// PendingHalves is the number of unresolved half messages indexed.
	PendingHalves int64
	// ChecksSent counts CHECK_TRANSACTION_STATE requests sent.
	ChecksSent int64
	// CheckReads and CheckReadBytes count the half records read for checks
	// and give-ups.
	CheckReads     int64
	CheckReadBytes int64
	// SkippedNoProducer counts candidates passed over, unread, because
	// their producer group had no live connection.
	SkippedNoProducer int64
	// GivenUp counts halves moved to TRANS_CHECK_MAX_TIME_TOPIC after
	// transactionCheckMax checks.
	GivenUp int64
	// Expired counts halves dropped because their record left the
	// CommitLog (retention).
	Expired int64
	// RebuildReads and RebuildReadBytes count the half and op records read
	// to rebuild the index after a start.
	RebuildReads     int64
	RebuildReadBytes int64
	// EndReadsSaved counts END_TRANSACTION requests answered from the
	// record the check had just read, without reading it again.
	EndReadsSaved int64
	// Rebuilding is true until the index has been rebuilt.
	Rebuilding bool
}

// Stats returns the service's counters.
func (s *CheckService) Stats() Stats {
	return Stats{
		PendingHalves:     int64(s.idx.Len()),
		ChecksSent:        s.checksSent.Load(),
		CheckReads:        s.checkReads.Load(),
		CheckReadBytes:    s.checkReadBytes.Load(),
		SkippedNoProducer: s.skippedNoProducer.Load(),
		GivenUp:           s.givenUp.Load(),
		Expired:           s.expired.Load(),
		RebuildReads:      s.rebuildReads.Load(),
		RebuildReadBytes:  s.rebuildReadBytes.Load(),
		EndReadsSaved:     s.endReadsSaved.Load(),
		Rebuilding:        s.idx.IsRebuilding(),
	}
}

// CheckService asks producers about half messages left unresolved. It
// works from the in-memory Index, so choosing
// what to check reads nothing; the only reads are the half records a check
// or a give-up needs, and the rebuild after a start, all on this service's
// goroutine and within transactionCheckReadMsgsPerSecond /
// transactionCheckReadBytesPerSecond. Checking a group with no live
// producer connection reads nothing.
//
// Every transactionCheckInterval it takes the halves whose age (now -
// bornTimestamp) reaches max(transactionTimeOut, CHECK_IMMUNITY_TIME_IN_SECONDS).
// Each such half counts one check attempt, recorded durably in an op record
// tagged "c" (body "<half offset>:<attempts>"): with a live connection of
// its PGROUP the half is read and CHECK_TRANSACTION_STATE goes oneway to
// it; without one nothing is read (RocketMQ counts those rounds too). A
// half with transactionCheckMax attempts already is read once more, moved
// to TRANS_CHECK_MAX_TIME_TOPIC and resolved. Unlike RocketMQ, the half is
// not appended again for every check: the check refers to the original
// record, so END_TRANSACTION answers it directly.
type CheckService struct {
	d     Deps
	idx   *Index
	cache *CheckedCache // records just read for checks, for the answering END_TRANSACTION
	clock clock.Clock

	// runMu serializes Start and Stop; the service starts again after a
	// Stop (a broker that is master again).
	runMu   sync.Mutex
	running bool
	runs    int // Starts so far
	quit    chan struct{}
	done    chan struct{}

	// saveMu serializes the snapshot and floor writes (the service's
	// goroutine, Stop, TruncateTo).
	saveMu       sync.Mutex
	savedVersion uint64 // index version of the last snapshot written
	saved        bool
	// savedHalfFrom and savedOpFrom are the last snapshot's start offsets.
	savedHalfFrom, savedOpFrom int64

	checksSent, checkReads, checkReadBytes, skippedNoProducer, givenUp, expired,
	rebuildReads, rebuildReadBytes, endReadsSaved atomic.Int64
}

// NewCheckService builds the check service over an empty index; Start
// rebuilds the index and runs the rounds.
func NewCheckService(d Deps) *CheckService {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &CheckService{d: d, idx: NewIndex(), cache: NewCheckedCache(CheckedCacheBytes), clock: clock.Or(d.Clock),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// Index is the pending-half index the service decides from (the half put
// and END_TRANSACTION keep it current).
func (s *CheckService) Index() *Index { return s.idx }

// TakeChecked returns, and drops, the half record at phy if a check has
// just read it, so END_TRANSACTION need not read it again.
func (s *CheckService) TakeChecked(phy int64) ([]byte, bool) {
	rec, ok := s.cache.Take(phy)
	if ok {
		s.endReadsSaved.Add(1)
	}
	return rec, ok
}

// Start rebuilds the index and runs the check rounds on a goroutine of
// the service. Starting a running service does nothing; a stopped one
// starts again with its index rebuilt from the snapshot and the queues
// (the halves and resolutions another master stored meanwhile are in
// them).
func (s *CheckService) Start() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.running {
		return
	}
	if s.runs > 0 {
		s.quit, s.done = make(chan struct{}), make(chan struct{})
		s.idx.Reset()
		s.saveMu.Lock()
		s.saved = false
		s.saveMu.Unlock()
	}
	s.running = true
	s.runs++
	go s.run()
}

// Stop ends the rounds and writes the floors and the index snapshot.
// Stopping a service that does not run does nothing.
func (s *CheckService) Stop() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if !s.running {
		return
	}
	s.running = false
	close(s.quit)
	<-s.done
	s.persistFloors()
	s.saveIndex()
}

func (s *CheckService) rates() (int64, int64) {
	cfg := s.d.Config()
	return cfg.ReadMsgsPerSecond, cfg.ReadBytesPerSecond
}

func (s *CheckService) run() {
	defer close(s.done)
	if !s.rebuild() {
		return
	}
	s.persistFloors()
	s.saveIndex()
	last := s.clock.Now()
	for {
		interval := time.Duration(max(s.d.Config().IntervalMs, 10)) * time.Millisecond
		if wait := last.Add(interval).Sub(s.clock.Now()); wait > 0 {
			// Waiting in slices of at most a second lets a live change of
			// transactionCheckInterval apply soon.
			select {
			case <-s.quit:
				return
			case <-s.clock.After(min(wait, time.Second)):
			}
			continue
		}
		last = s.clock.Now()
		s.round()
		s.persistFloors()
		s.saveIndex()
	}
}

// saveIndex writes the index snapshot when it or the offsets a rebuild
// would start from changed since the last one (on this service's
// goroutine, or at stop after it ended).
func (s *CheckService) saveIndex() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.saveIndexLocked()
}

func (s *CheckService) saveIndexLocked() {
	opEnd := s.d.Store.MaxOffsetInQueue(s.d.OpTopic, 0)
	if s.saved && !s.idx.ChangedSince(s.savedVersion) {
		if half, op := s.idx.Starts(opEnd); half == s.savedHalfFrom && op == s.savedOpFrom {
			return
		}
	}
	hs, halfFrom, opFrom, v, ok := s.idx.Snapshot(opEnd)
	if !ok {
		return
	}
	data, err := EncodeIndex(hs, halfFrom, opFrom)
	if err == nil {
		err = metadata.WriteFileAtomic(s.d.IndexPath, data)
	}
	if err != nil {
		s.d.Logger.Error("transaction index: write snapshot", "file", s.d.IndexPath, "err", err)
		return
	}
	s.saved, s.savedVersion, s.savedHalfFrom, s.savedOpFrom = true, v, halfFrom, opFrom
}

// persistFloors records in the consumer offset table where a rebuild
// must start reading the half and op queues.
func (s *CheckService) persistFloors() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.persistFloorsLocked()
}

func (s *CheckService) persistFloorsLocked() {
	if s.idx.IsRebuilding() {
		return
	}
	half, op := s.idx.Floors(s.d.Store.MaxOffsetInQueue(s.d.OpTopic, 0))
	s.d.Offsets.Commit(checkGroup, s.d.HalfTopic, 0, half)
	s.d.Offsets.Commit(checkGroup, s.d.OpTopic, 0, op)
}

// round checks every candidate once.
func (s *CheckService) round() {
	cfg := s.d.Config()
	var attempts checkCounts // rounds without a producer, batched
	defer attempts.flush(s)
	for _, h := range s.idx.Candidates(s.clock.Now().UnixMilli(), cfg.TimeoutMs) {
		select {
		case <-s.quit:
			return
		default:
		}
		cfg = s.d.Config()
		conn := s.d.Producer(h.Group)
		if conn == nil {
			s.skippedNoProducer.Add(1)
		}
		step := planCheck(h, conn != nil, s.d.Store.MinPhyOffset, cfg.CheckMax)
		switch step {
		case stepCount:
			attempts.add(s, h.QueueOffset)
			continue
		case stepExpire:
			if s.idx.Resolve(h.QueueOffset) {
				s.expired.Add(1)
			}
			continue
		}
		if !s.d.Budget.Wait(int64(h.Size), s.rates, s.quit) {
			return
		}
		if _, ok := s.idx.Get(h.QueueOffset); !ok {
			continue // resolved while waiting for the budget
		}
		rec, err := s.d.Store.LookMessageByOffset(h.Phy)
		s.checkReads.Add(1)
		s.checkReadBytes.Add(int64(len(rec)))
		if err != nil {
			s.d.Logger.Warn("transaction check: read half message", "offset", h.Phy, "err", err)
			continue
		}
		x, err := message.DecodeRecord(rec)
		if err != nil || x.Topic != s.d.HalfTopic || x.QueueOffset != h.QueueOffset {
			s.d.Logger.Error("transaction check: the indexed record is not the half message; dropped",
				"offset", h.Phy, "queueOffset", h.QueueOffset, "err", err)
			s.idx.Resolve(h.QueueOffset)
			continue
		}
		if step == stepGiveUp {
			s.giveUp(x, h)
			continue
		}
		s.sendCheck(conn, rec, x, h, cfg)
	}
}

// sendCheck sends CHECK_TRANSACTION_STATE for x and records the check.
func (s *CheckService) sendCheck(conn Conn, rec []byte, x *message.Ext, h PendingHalf, cfg Config) {
	body, err := checkBody(x, h.Checks+1)
	if err != nil {
		s.d.Logger.Warn("transaction check: encode check body", "err", err)
		return
	}
	uniq := x.Properties[message.PropertyUniqClientMessageIDKeyIdx]
	txID := x.Properties[message.PropertyTransactionID]
	if txID == "" {
		txID = uniq
	}
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(x.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(x.PhysicalOffset, 10),
		"msgId":                uniq,
		"transactionId":        txID,
		"offsetMsgId":          message.OffsetMsgID(x.StoreHost, x.PhysicalOffset),
		"topic":                s.d.HalfTopic,
		"bname":                cfg.BrokerName,
	}, body)
	req.Flag |= remoting.FlagOneway
	s.cache.Put(x.PhysicalOffset, rec)
	if err := conn.InvokeOneway(req); err != nil {
		s.d.Logger.Debug("transaction check: send", "group", h.Group, "err", err)
		return
	}
	s.checksSent.Add(1)
	s.countCheck(h.QueueOffset)
}

// countCheck adds one to a half's check count and records it in an op
// record (no read).
func (s *CheckService) countCheck(queueOffset int64) {
	var b checkCounts
	b.add(s, queueOffset)
	b.flush(s)
}

// checkCounts batches check attempts into op records of up to
// opBatch entries.
type checkCounts struct{ items []string }

// add counts one attempt for a half and flushes a full batch.
func (c *checkCounts) add(s *CheckService, queueOffset int64) {
	n := s.idx.AddCheck(queueOffset)
	if n == 0 {
		return
	}
	c.items = append(c.items, strconv.FormatInt(queueOffset, 10)+":"+strconv.Itoa(int(n)))
	if len(c.items) >= opBatch {
		c.flush(s)
	}
}

// flush appends the pending attempts as one op record.
func (c *checkCounts) flush(s *CheckService) {
	if len(c.items) == 0 {
		return
	}
	s.putOpTag(opCheck, strings.Join(c.items, ","), func(code int32, remark string) {
		if code != remoting.Success {
			s.d.Logger.Warn("transaction check: record check counts", "code", code, "remark", remark)
		}
	})
	c.items = c.items[:0]
}

// giveUp moves a half checked transactionCheckMax times to
// TRANS_CHECK_MAX_TIME_TOPIC and resolves it.
func (s *CheckService) giveUp(x *message.Ext, h PendingHalf) {
	m := x.ToInner()
	m.Topic = s.d.CheckMaxTopic
	m.QueueID = 0
	m.StoreHost = s.d.StoreHost()
	m.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(int(h.Checks))
	m.PropertiesString = message.EncodeProperties(m.Properties)
	s.d.EnsureTopic(s.d.CheckMaxTopic)
	if _, ok := s.put(m); !ok {
		return
	}
	done := make(chan int32, 1)
	s.PutOp(h.QueueOffset, func(code int32, _ string) { done <- code })
	select {
	case code := <-done:
		if code != remoting.Success {
			return
		}
	case <-s.quit:
		return
	}
	s.givenUp.Add(1)
	s.d.Logger.Info("transaction check: half message given up after transactionCheckMax checks",
		"msgId", x.Properties[message.PropertyUniqClientMessageIDKeyIdx], "group", h.Group, "checks", h.Checks)
}

// put stores m and waits for the outcome.
func (s *CheckService) put(m *message.Inner) (store.PutResult, bool) {
	ch := make(chan store.PutResult, 1)
	s.d.Store.PutMessage(m, func(r store.PutResult) { ch <- r })
	var r store.PutResult
	select {
	case r = <-ch:
	case <-s.quit:
		return r, false
	}
	if r.Status != store.PutOK && r.Status != store.FlushDiskTimeout {
		s.d.Logger.Warn("transaction check: store", "topic", m.Topic, "status", int(r.Status), "remark", r.Remark)
		return r, false
	}
	return r, true
}

// rebuild fills the index from the half and op queues, from the floors
// persisted in the consumer offset table, within the read budget. It
// reports false when stopped first.
func (s *CheckService) rebuild() bool {
	st := s.d.Store
	// Let the store dispatch what its recovery found, so both queues are
	// complete up to the moment the broker started.
	if !s.d.WaitDispatch(s.quit) {
		return false
	}
	halfFrom := s.d.Offsets.Query(checkGroup, s.d.HalfTopic, 0)
	opFrom := s.d.Offsets.Query(checkGroup, s.d.OpTopic, 0)
	halfEnd := st.MaxOffsetInQueue(s.d.HalfTopic, 0)
	opEnd := st.MaxOffsetInQueue(s.d.OpTopic, 0)
	// The snapshot, when there is a readable one, saves reading what it
	// holds; entries the store no longer has (a lost tail) are dropped.
	doc, hs, err := LoadIndex(s.d.IndexPath)
	if err != nil {
		s.d.Logger.Warn("transaction index: snapshot ignored, rebuilding from the floors", "err", err)
	}
	snapshotHalves := 0
	if doc != nil {
		halfFrom, opFrom = min(doc.HalfFrom, halfEnd), min(doc.OpFrom, opEnd)
		maxPhy := st.MaxPhyOffset()
		for i := range hs {
			if h := &hs[i]; h.QueueOffset < halfEnd && h.Phy+int64(h.Size) <= maxPhy {
				h.OpMark = min(h.OpMark, opFrom)
				s.idx.Add(h)
				snapshotHalves++
			}
		}
	}
	halfFrom = max(halfFrom, st.MinOffsetInQueue(s.d.HalfTopic, 0), 0)
	opFrom = max(opFrom, st.MinOffsetInQueue(s.d.OpTopic, 0), 0)
	ok := s.scan(s.d.HalfTopic, halfFrom, halfEnd, func(x *message.Ext) {
		s.idx.Add(PendingFromRecord(x, opFrom))
	})
	if !ok {
		return false
	}
	ok = s.scan(s.d.OpTopic, opFrom, opEnd, func(x *message.Ext) {
		check := x.Properties[message.PropertyTags] == opCheck
		for _, item := range strings.Split(string(x.Body), ",") {
			qs, ns, _ := strings.Cut(item, ":")
			q, err := strconv.ParseInt(qs, 10, 64)
			if err != nil {
				continue
			}
			if !check {
				s.idx.Resolve(q)
			} else if n, err := strconv.Atoi(ns); err == nil {
				s.idx.RaiseChecks(q, int32(n))
			}
		}
	})
	if !ok {
		return false
	}
	s.idx.FinishRebuild(halfEnd)
	s.d.Logger.Info("transaction index rebuilt", "pending", s.idx.Len(), "fromSnapshot", snapshotHalves,
		"halfFrom", halfFrom, "halfEnd", halfEnd,
		"opFrom", opFrom, "opEnd", opEnd, "reads", s.rebuildReads.Load(), "bytes", s.rebuildReadBytes.Load())
	return true
}

// scan reads queue 0 of topic over [from, end), one record per read
// within the budget, and passes each decoded record to fn.
func (s *CheckService) scan(topic string, from, end int64, fn func(*message.Ext)) bool {
	for off := from; off < end; {
		if !s.d.Budget.Wait(0, s.rates, s.quit) {
			return false
		}
		res := s.d.Store.GetMessage(checkGroup, topic, 0, off, 1, math.MaxInt32, nil)
		if res == nil {
			return true
		}
		s.rebuildReads.Add(1)
		s.rebuildReadBytes.Add(int64(res.BufferTotalSize))
		msgRate, byteRate := s.rates()
		s.d.Budget.Charge(int64(res.BufferTotalSize), msgRate, byteRate)
		if res.Status != store.Found || len(res.Buffers) == 0 {
			next := res.NextBeginOffset
			res.Release()
			if next <= off {
				return true
			}
			off = next
			continue
		}
		for i, buf := range res.Buffers {
			x, err := message.DecodeRecord(buf)
			if err != nil {
				s.d.Logger.Error("transaction index: undecodable record skipped", "topic", topic,
					"offset", res.QueueOffsets[i], "err", err)
				continue
			}
			fn(x)
		}
		off = res.NextBeginOffset
		res.Release()
	}
	return true
}

// checkBody encodes the CHECK_TRANSACTION_STATE body: the half record with
// topic and queue id set back to REAL_TOPIC/REAL_QID and
// TRANSACTION_CHECK_TIMES set, at the half's own offsets.
func checkBody(x *message.Ext, checks int32) ([]byte, error) {
	m := x.ToInner()
	if t := m.Properties[message.PropertyRealTopic]; t != "" {
		m.Topic = t
	}
	if q, err := strconv.Atoi(m.Properties[message.PropertyRealQueueID]); err == nil {
		m.QueueID = int32(q)
	}
	m.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(int(checks))
	rec, err := message.AppendRecord(nil, m, message.EncodeProperties(m.Properties))
	if err != nil {
		return nil, err
	}
	message.PatchRecord(rec, x.QueueOffset, x.PhysicalOffset, x.StoreTimestamp)
	return rec, nil
}
