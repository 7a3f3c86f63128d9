package broker

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const (
	// transGroup keeps the check service's floors in the consumer offset
	// table (RocketMQ's CID_RMQ_SYS_TRANS).
	transGroup = systopic.TransGroup
	// Op record tags: "d" = the half is resolved (commit, rollback or
	// given up), "c" = one check was sent.
	transOpDone  = "d"
	transOpCheck = "c"
	// transOpBatch is the most check attempts one "c" op record carries.
	transOpBatch = 256
)

// TransactionStats are the transaction check service's counters.
type TransactionStats struct {
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

// TransactionStats returns the transaction check service's counters.
func (b *Broker) TransactionStats() TransactionStats {
	s := b.txCheck
	return TransactionStats{
		PendingHalves:     int64(s.idx.len()),
		ChecksSent:        s.checksSent.Load(),
		CheckReads:        s.checkReads.Load(),
		CheckReadBytes:    s.checkReadBytes.Load(),
		SkippedNoProducer: s.skippedNoProducer.Load(),
		GivenUp:           s.givenUp.Load(),
		Expired:           s.expired.Load(),
		RebuildReads:      s.rebuildReads.Load(),
		RebuildReadBytes:  s.rebuildReadBytes.Load(),
		EndReadsSaved:     s.endReadsSaved.Load(),
		Rebuilding:        s.idx.isRebuilding(),
	}
}

// transactionCheckService asks producers about half messages left
// unresolved. It works from the in-memory transactionIndex, so choosing
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
type transactionCheckService struct {
	b      *Broker
	idx    *transactionIndex
	cache  *checkedCache // records just read for checks, for the answering END_TRANSACTION
	clock  serviceClock
	budget *readBudget

	quit    chan struct{}
	done    chan struct{}
	started bool

	indexPath    string // config/transactionIndex.json
	savedVersion uint64 // index version of the last snapshot written
	saved        bool
	// savedHalfFrom and savedOpFrom are the last snapshot's start offsets.
	savedHalfFrom, savedOpFrom int64

	checksSent, checkReads, checkReadBytes, skippedNoProducer, givenUp, expired,
	rebuildReads, rebuildReadBytes, endReadsSaved atomic.Int64
}

func newTransactionCheckService(b *Broker) *transactionCheckService {
	s := &transactionCheckService{b: b, idx: newTransactionIndex(), cache: newCheckedCache(checkedCacheBytes),
		quit: make(chan struct{}), done: make(chan struct{}),
		indexPath: filepath.Join(b.storeConfig().StorePathRootDir, "config", "transactionIndex.json")}
	s.setClock(wallClock{})
	return s
}

// setClock replaces the clock (before start).
func (s *transactionCheckService) setClock(c serviceClock) {
	s.clock = c
	s.budget = newReadBudget(c)
}

func (s *transactionCheckService) start() {
	s.started = true
	go s.run()
}

func (s *transactionCheckService) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	if s.started {
		<-s.done
		s.persistFloors()
		s.saveIndex()
	}
}

func (s *transactionCheckService) rates() (int64, int64) {
	cfg := s.b.config()
	return cfg.TransactionCheckReadMsgsPerSecond, cfg.TransactionCheckReadBytesPerSecond
}

func (s *transactionCheckService) run() {
	defer close(s.done)
	if !s.rebuild() {
		return
	}
	s.persistFloors()
	s.saveIndex()
	last := s.clock.Now()
	for {
		interval := millis(max(s.b.config().TransactionCheckInterval, 10))
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
func (s *transactionCheckService) saveIndex() {
	opEnd := s.b.store.MaxOffsetInQueue(topicTransOpHalf, 0)
	if s.saved && !s.idx.changedSince(s.savedVersion) {
		if half, op := s.idx.starts(opEnd); half == s.savedHalfFrom && op == s.savedOpFrom {
			return
		}
	}
	hs, halfFrom, opFrom, v, ok := s.idx.snapshot(opEnd)
	if !ok {
		return
	}
	data, err := encodeTransactionIndex(hs, halfFrom, opFrom)
	if err == nil {
		err = writeFileAtomic(s.indexPath, data)
	}
	if err != nil {
		s.b.logger.Error("transaction index: write snapshot", "file", s.indexPath, "err", err)
		return
	}
	s.saved, s.savedVersion, s.savedHalfFrom, s.savedOpFrom = true, v, halfFrom, opFrom
}

// persistFloors records in the consumer offset table where a rebuild
// must start reading the half and op queues.
func (s *transactionCheckService) persistFloors() {
	if s.idx.isRebuilding() {
		return
	}
	half, op := s.idx.floors(s.b.store.MaxOffsetInQueue(topicTransOpHalf, 0))
	s.b.offsets.Commit(transGroup, topicTransHalf, 0, half)
	s.b.offsets.Commit(transGroup, topicTransOpHalf, 0, op)
}

// round checks every candidate once.
func (s *transactionCheckService) round() {
	cfg := s.b.config()
	var attempts checkCounts // rounds without a producer, batched
	defer attempts.flush(s)
	for _, h := range s.idx.candidates(s.clock.Now().UnixMilli(), cfg.TransactionTimeOut) {
		select {
		case <-s.quit:
			return
		default:
		}
		cfg = s.b.config()
		conn := s.b.producers.AnyConn(h.group)
		if conn == nil {
			s.skippedNoProducer.Add(1)
		}
		step := planCheck(h, conn != nil, s.b.store.MinPhyOffset, cfg.TransactionCheckMax)
		switch step {
		case stepCount:
			attempts.add(s, h.queueOffset)
			continue
		case stepExpire:
			if s.idx.resolve(h.queueOffset) {
				s.expired.Add(1)
			}
			continue
		}
		if !s.budget.wait(int64(h.size), s.rates, s.quit) {
			return
		}
		if _, ok := s.idx.get(h.queueOffset); !ok {
			continue // resolved while waiting for the budget
		}
		rec, err := s.b.store.LookMessageByOffset(h.phy)
		s.checkReads.Add(1)
		s.checkReadBytes.Add(int64(len(rec)))
		if err != nil {
			s.b.logger.Warn("transaction check: read half message", "offset", h.phy, "err", err)
			continue
		}
		x, err := message.DecodeRecord(rec)
		if err != nil || x.Topic != topicTransHalf || x.QueueOffset != h.queueOffset {
			s.b.logger.Error("transaction check: the indexed record is not the half message; dropped",
				"offset", h.phy, "queueOffset", h.queueOffset, "err", err)
			s.idx.resolve(h.queueOffset)
			continue
		}
		if step == stepGiveUp {
			s.giveUp(x, h)
			continue
		}
		s.sendCheck(conn, rec, x, h, cfg)
	}
}

// checkStep is what a round does with one candidate half.
type checkStep int

const (
	// stepCount counts one check attempt and reads nothing: the half's
	// group has no live producer connection and fewer than
	// transactionCheckMax attempts.
	stepCount checkStep = iota
	// stepExpire drops the half: its record left the CommitLog.
	stepExpire
	// stepCheck reads the half and sends CHECK_TRANSACTION_STATE.
	stepCheck
	// stepGiveUp reads the half and moves it to TRANS_CHECK_MAX_TIME_TOPIC.
	stepGiveUp
)

// planCheck decides a round's step for candidate h. As in RocketMQ a round
// without a producer still counts as an attempt, so a half whose producer
// is gone is given up after transactionCheckMax rounds (that move reads it
// once). minPhy (the CommitLog's first offset) is read only when needed.
func planCheck(h pendingHalf, hasProducer bool, minPhy func() int64, checkMax int) checkStep {
	switch {
	case !hasProducer && int(h.checks) < checkMax:
		return stepCount
	case h.phy < minPhy():
		return stepExpire
	case int(h.checks) >= checkMax || !hasProducer:
		return stepGiveUp
	}
	return stepCheck
}

// sendCheck sends CHECK_TRANSACTION_STATE for x and records the check.
func (s *transactionCheckService) sendCheck(conn interface {
	InvokeOneway(*remoting.Command) error
}, rec []byte, x *message.Ext, h pendingHalf, cfg *Config) {
	body, err := checkBody(x, h.checks+1)
	if err != nil {
		s.b.logger.Warn("transaction check: encode check body", "err", err)
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
		"topic":                topicTransHalf,
		"bname":                cfg.BrokerName,
	}, body)
	req.Flag |= remoting.FlagOneway
	s.cache.put(x.PhysicalOffset, rec)
	if err := conn.InvokeOneway(req); err != nil {
		s.b.logger.Debug("transaction check: send", "group", h.group, "err", err)
		return
	}
	s.checksSent.Add(1)
	s.countCheck(h.queueOffset)
}

// countCheck adds one to a half's check count and records it in an op
// record (no read).
func (s *transactionCheckService) countCheck(queueOffset int64) {
	var b checkCounts
	b.add(s, queueOffset)
	b.flush(s)
}

// checkCounts batches check attempts into op records of up to
// transOpBatch entries.
type checkCounts struct{ items []string }

// add counts one attempt for a half and flushes a full batch.
func (c *checkCounts) add(s *transactionCheckService, queueOffset int64) {
	n := s.idx.addCheck(queueOffset)
	if n == 0 {
		return
	}
	c.items = append(c.items, strconv.FormatInt(queueOffset, 10)+":"+strconv.Itoa(int(n)))
	if len(c.items) >= transOpBatch {
		c.flush(s)
	}
}

// flush appends the pending attempts as one op record.
func (c *checkCounts) flush(s *transactionCheckService) {
	if len(c.items) == 0 {
		return
	}
	s.b.putTransactionOpTag(transOpCheck, strings.Join(c.items, ","), func(code int32, remark string) {
		if code != remoting.Success {
			s.b.logger.Warn("transaction check: record check counts", "code", code, "remark", remark)
		}
	})
	c.items = c.items[:0]
}

// giveUp moves a half checked transactionCheckMax times to
// TRANS_CHECK_MAX_TIME_TOPIC and resolves it.
func (s *transactionCheckService) giveUp(x *message.Ext, h pendingHalf) {
	m := x.ToInner()
	m.Topic = topicTransCheckMax
	m.QueueID = 0
	m.StoreHost = s.b.storeHost
	m.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(int(h.checks))
	m.PropertiesString = message.EncodeProperties(m.Properties)
	if s.b.topics.Find(topicTransCheckMax) == nil {
		s.b.topics.CreateInSendBack(topicTransCheckMax, 1, permRead|permWrite, 0)
	}
	if _, ok := s.put(m); !ok {
		return
	}
	done := make(chan int32, 1)
	s.b.putTransactionOp(h.queueOffset, func(code int32, _ string) { done <- code })
	select {
	case code := <-done:
		if code != remoting.Success {
			return
		}
	case <-s.quit:
		return
	}
	s.givenUp.Add(1)
	s.b.logger.Info("transaction check: half message given up after transactionCheckMax checks",
		"msgId", x.Properties[message.PropertyUniqClientMessageIDKeyIdx], "group", h.group, "checks", h.checks)
}

// put stores m and waits for the outcome.
func (s *transactionCheckService) put(m *message.Inner) (store.PutResult, bool) {
	ch := make(chan store.PutResult, 1)
	s.b.store.PutMessage(m, func(r store.PutResult) { ch <- r })
	var r store.PutResult
	select {
	case r = <-ch:
	case <-s.quit:
		return r, false
	}
	if r.Status != store.PutOK && r.Status != store.FlushDiskTimeout {
		s.b.logger.Warn("transaction check: store", "topic", m.Topic, "status", int(r.Status), "remark", r.Remark)
		return r, false
	}
	return r, true
}

// rebuild fills the index from the half and op queues, from the floors
// persisted in the consumer offset table, within the read budget. It
// reports false when stopped first.
func (s *transactionCheckService) rebuild() bool {
	st := s.b.store
	// Let the store dispatch what its recovery found, so both queues are
	// complete up to the moment the broker started.
	if !waitStoreDispatch(st, s.quit) {
		return false
	}
	halfFrom := s.b.offsets.Query(transGroup, topicTransHalf, 0)
	opFrom := s.b.offsets.Query(transGroup, topicTransOpHalf, 0)
	halfEnd := st.MaxOffsetInQueue(topicTransHalf, 0)
	opEnd := st.MaxOffsetInQueue(topicTransOpHalf, 0)
	// The snapshot, when there is a readable one, saves reading what it
	// holds; entries the store no longer has (a lost tail) are dropped.
	doc, hs, err := loadTransactionIndex(s.indexPath)
	if err != nil {
		s.b.logger.Warn("transaction index: snapshot ignored, rebuilding from the floors", "err", err)
	}
	snapshotHalves := 0
	if doc != nil {
		halfFrom, opFrom = min(doc.HalfFrom, halfEnd), min(doc.OpFrom, opEnd)
		maxPhy := st.MaxPhyOffset()
		for i := range hs {
			if h := &hs[i]; h.queueOffset < halfEnd && h.phy+int64(h.size) <= maxPhy {
				h.opMark = min(h.opMark, opFrom)
				s.idx.add(h)
				snapshotHalves++
			}
		}
	}
	halfFrom = max(halfFrom, st.MinOffsetInQueue(topicTransHalf, 0), 0)
	opFrom = max(opFrom, st.MinOffsetInQueue(topicTransOpHalf, 0), 0)
	ok := s.scan(topicTransHalf, halfFrom, halfEnd, func(x *message.Ext) {
		s.idx.add(pendingFromRecord(x, opFrom))
	})
	if !ok {
		return false
	}
	ok = s.scan(topicTransOpHalf, opFrom, opEnd, func(x *message.Ext) {
		check := x.Properties[message.PropertyTags] == transOpCheck
		for _, item := range strings.Split(string(x.Body), ",") {
			qs, ns, _ := strings.Cut(item, ":")
			q, err := strconv.ParseInt(qs, 10, 64)
			if err != nil {
				continue
			}
			if !check {
				s.idx.resolve(q)
			} else if n, err := strconv.Atoi(ns); err == nil {
				s.idx.raiseChecks(q, int32(n))
			}
		}
	})
	if !ok {
		return false
	}
	s.idx.finishRebuild(halfEnd)
	s.b.logger.Info("transaction index rebuilt", "pending", s.idx.len(), "fromSnapshot", snapshotHalves,
		"halfFrom", halfFrom, "halfEnd", halfEnd,
		"opFrom", opFrom, "opEnd", opEnd, "reads", s.rebuildReads.Load(), "bytes", s.rebuildReadBytes.Load())
	return true
}

// scan reads queue 0 of topic over [from, end), one record per read
// within the budget, and passes each decoded record to fn.
func (s *transactionCheckService) scan(topic string, from, end int64, fn func(*message.Ext)) bool {
	for off := from; off < end; {
		if !s.budget.wait(0, s.rates, s.quit) {
			return false
		}
		res := s.b.store.GetMessage(transGroup, topic, 0, off, 1, math.MaxInt32, nil)
		if res == nil {
			return true
		}
		s.rebuildReads.Add(1)
		s.rebuildReadBytes.Add(int64(res.BufferTotalSize))
		msgRate, byteRate := s.rates()
		s.budget.charge(int64(res.BufferTotalSize), msgRate, byteRate)
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
				s.b.logger.Error("transaction index: undecodable record skipped", "topic", topic,
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
