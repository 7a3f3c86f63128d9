package broker

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const (
	// transGroup keeps the check service's floors in the consumer offset
	// table (RocketMQ's CID_RMQ_SYS_TRANS).
	transGroup = "CID_RMQ_SYS_TRANS"
	// Op record tags: "d" = the half is resolved (commit, rollback or
	// given up), "c" = one check was sent.
	transOpDone  = "d"
	transOpCheck = "c"
	// transDispatchWait bounds how long the rebuild waits for the store to
	// dispatch what recovery found before it reads the half and op queues.
	transDispatchWait = 30 * time.Second
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
		Rebuilding:        s.idx.isRebuilding(),
	}
}

// transactionCheckService asks producers about half messages left
// unresolved. It works from the in-memory transactionIndex, so choosing
// what to check reads nothing; the only reads are the half records a check
// or a give-up needs, and the rebuild after a start, all on this service's
// goroutine and within transactionCheckReadMsgsPerSecond /
// transactionCheckReadBytesPerSecond. A group with no live producer
// connection costs no read at all.
//
// Every transactionCheckInterval it takes the halves whose age (now -
// bornTimestamp) reaches max(transactionTimeOut, CHECK_IMMUNITY_TIME_IN_SECONDS):
// one checked transactionCheckMax times already is moved to
// TRANS_CHECK_MAX_TIME_TOPIC and resolved; otherwise CHECK_TRANSACTION_STATE
// goes oneway to a live connection of its PGROUP and an op record tagged
// "c" counts the check durably. Unlike RocketMQ, the half is not appended
// again for every check: the check refers to the original record, so
// END_TRANSACTION answers it directly.
type transactionCheckService struct {
	b      *Broker
	idx    *transactionIndex
	clock  serviceClock
	budget *readBudget

	quit    chan struct{}
	done    chan struct{}
	started bool

	checksSent, checkReads, checkReadBytes, skippedNoProducer, givenUp, expired,
	rebuildReads, rebuildReadBytes atomic.Int64
}

func newTransactionCheckService(b *Broker) *transactionCheckService {
	s := &transactionCheckService{b: b, idx: newTransactionIndex(), quit: make(chan struct{}), done: make(chan struct{})}
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
	}
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
			continue
		}
		if h.phy < s.b.store.MinPhyOffset() {
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
		if int(h.checks) >= cfg.TransactionCheckMax {
			s.giveUp(x, h)
			continue
		}
		s.sendCheck(conn, x, h, cfg)
	}
}

// sendCheck sends CHECK_TRANSACTION_STATE for x and records the check.
func (s *transactionCheckService) sendCheck(conn interface {
	InvokeOneway(*remoting.Command) error
}, x *message.Ext, h pendingHalf, cfg *Config) {
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
	if err := conn.InvokeOneway(req); err != nil {
		s.b.logger.Debug("transaction check: send", "group", h.group, "err", err)
		return
	}
	s.checksSent.Add(1)
	s.idx.addCheck(h.queueOffset, 1)
	s.b.putTransactionOpTag(h.queueOffset, transOpCheck, func(code int32, remark string) {
		if code != remoting.Success {
			s.b.logger.Warn("transaction check: record check count", "code", code, "remark", remark)
		}
	})
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
	s.b.putTransactionOpTag(h.queueOffset, transOpDone, func(code int32, _ string) { done <- code })
	select {
	case code := <-done:
		if code != remoting.Success {
			return
		}
	case <-s.quit:
		return
	}
	s.idx.resolve(h.queueOffset)
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
	target := st.MaxPhyOffset()
	deadline := time.Now().Add(transDispatchWait)
	for st.MaxPhyOffset()-st.DispatchBehindBytes() < target && time.Now().Before(deadline) {
		select {
		case <-s.quit:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	halfFrom := max(s.b.offsets.Query(transGroup, topicTransHalf, 0), st.MinOffsetInQueue(topicTransHalf, 0), 0)
	opFrom := max(s.b.offsets.Query(transGroup, topicTransOpHalf, 0), st.MinOffsetInQueue(topicTransOpHalf, 0), 0)
	halfEnd := st.MaxOffsetInQueue(topicTransHalf, 0)
	opEnd := st.MaxOffsetInQueue(topicTransOpHalf, 0)
	ok := s.scan(topicTransHalf, halfFrom, halfEnd, func(x *message.Ext) {
		s.idx.add(pendingFromRecord(x, opFrom))
	})
	if !ok {
		return false
	}
	ok = s.scan(topicTransOpHalf, opFrom, opEnd, func(x *message.Ext) {
		n, err := strconv.ParseInt(string(x.Body), 10, 64)
		if err != nil || n < halfFrom {
			return
		}
		switch x.Properties[message.PropertyTags] {
		case transOpCheck:
			s.idx.addCheck(n, 1)
		default:
			s.idx.resolve(n)
		}
	})
	if !ok {
		return false
	}
	s.idx.finishRebuild(halfEnd)
	s.b.logger.Info("transaction index rebuilt", "pending", s.idx.len(), "halfFrom", halfFrom, "halfEnd", halfEnd,
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
