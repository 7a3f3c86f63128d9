package broker

import (
	"math"
	"strconv"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

const (
	// transGroup keeps the check service's progress in the consumer offset
	// table (RocketMQ's CID_RMQ_SYS_TRANS).
	transGroup = "CID_RMQ_SYS_TRANS"
	// transCheckBudget bounds the half messages examined per round, so a
	// backlog cannot turn a round into a read storm (design rule 6).
	transCheckBudget = 2000
	// transScanBatch is how many queue entries one read returns.
	transScanBatch = 32
)

// transactionCheckService asks producers about half messages left
// unresolved: every transactionCheckInterval it reads the op queue
// (resolved half offsets), then walks the half queue from its progress
// mark. A half message older than transactionTimeOut (or its
// CHECK_IMMUNITY_TIME_IN_SECONDS) is stored again with
// TRANSACTION_CHECK_TIMES+1 and CHECK_TRANSACTION_STATE is sent, oneway,
// to a connection of its producer group; after transactionCheckMax checks
// it is moved to TRANS_CHECK_MAX_TIME_TOPIC. Progress lives in the consumer
// offset table under CID_RMQ_SYS_TRANS.
type transactionCheckService struct {
	b        *Broker
	resolved map[int64]bool // half offsets resolved by END_TRANSACTION (op queue)
	quit     chan struct{}
	done     chan struct{}
	started  bool
}

func newTransactionCheckService(b *Broker) *transactionCheckService {
	return &transactionCheckService{b: b, resolved: make(map[int64]bool), quit: make(chan struct{}), done: make(chan struct{})}
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
	}
}

func (s *transactionCheckService) run() {
	defer close(s.done)
	for {
		interval := millis(max(s.b.config().TransactionCheckInterval, 10))
		t := time.NewTimer(interval)
		select {
		case <-s.quit:
			t.Stop()
			return
		case <-t.C:
		}
		s.round()
	}
}

// read returns decoded records of topic queue 0 from offset.
func (s *transactionCheckService) read(topic string, offset int64) ([]*message.Ext, []int64, int64, store.GetStatus) {
	res := s.b.store.GetMessage(transGroup, topic, 0, offset, transScanBatch, math.MaxInt32, nil)
	if res == nil {
		return nil, nil, offset, store.NoMatchedLogicQueue
	}
	defer res.Release()
	exts := make([]*message.Ext, 0, len(res.Buffers))
	offs := make([]int64, 0, len(res.Buffers))
	for i, buf := range res.Buffers {
		x, err := message.DecodeRecord(buf)
		if err != nil {
			s.b.logger.Error("transaction check: undecodable record skipped", "topic", topic, "offset", res.QueueOffsets[i], "err", err)
			continue
		}
		exts = append(exts, x)
		offs = append(offs, res.QueueOffsets[i])
	}
	return exts, offs, res.NextBeginOffset, res.Status
}

func (s *transactionCheckService) round() {
	s.readOps()
	cfg := s.b.config()
	halfOff := max(s.b.offsets.Query(transGroup, topicTransHalf, 0), s.b.store.MinOffsetInQueue(topicTransHalf, 0), 0)
	examined := 0
	for examined < transCheckBudget {
		select {
		case <-s.quit:
			return
		default:
		}
		exts, offs, next, status := s.read(topicTransHalf, halfOff)
		if status != store.Found {
			if next > halfOff && (status == store.OffsetTooSmall || status == store.OffsetFoundNull) {
				halfOff = next
				s.b.offsets.Commit(transGroup, topicTransHalf, 0, halfOff)
				continue
			}
			return
		}
		for i, x := range exts {
			examined++
			qoff := offs[i]
			if s.resolved[qoff] {
				delete(s.resolved, qoff)
			} else if !s.check(x, cfg) {
				return // too young: later entries are younger still
			}
			halfOff = qoff + 1
			s.b.offsets.Commit(transGroup, topicTransHalf, 0, halfOff)
		}
		if len(exts) == 0 {
			halfOff = next
			s.b.offsets.Commit(transGroup, topicTransHalf, 0, halfOff)
		}
	}
}

// readOps collects resolved half offsets from the op queue.
func (s *transactionCheckService) readOps() {
	opOff := max(s.b.offsets.Query(transGroup, topicTransOpHalf, 0), s.b.store.MinOffsetInQueue(topicTransOpHalf, 0), 0)
	halfOff := s.b.offsets.Query(transGroup, topicTransHalf, 0)
	for {
		exts, offs, next, status := s.read(topicTransOpHalf, opOff)
		if status != store.Found {
			if next > opOff && (status == store.OffsetTooSmall || status == store.OffsetFoundNull) {
				opOff = next
				continue
			}
			break
		}
		for i, x := range exts {
			if n, err := strconv.ParseInt(string(x.Body), 10, 64); err == nil && n >= halfOff {
				s.resolved[n] = true
			}
			opOff = offs[i] + 1
		}
		if len(exts) == 0 {
			opOff = next
		}
	}
	s.b.offsets.Commit(transGroup, topicTransOpHalf, 0, opOff)
}

// check handles one unresolved half message; it returns false when the
// message is too young to check yet.
func (s *transactionCheckService) check(x *message.Ext, cfg *Config) bool {
	immunity := millis(cfg.TransactionTimeOut)
	if v, err := strconv.ParseInt(x.Properties[message.PropertyCheckImmunityTimeInSeconds], 10, 64); err == nil && v > 0 {
		immunity = time.Duration(v) * time.Second
	}
	if time.Since(time.UnixMilli(x.BornTimestamp)) < immunity {
		return false
	}
	times, _ := strconv.Atoi(x.Properties[message.PropertyTransactionCheckTimes])
	m := x.ToInner()
	m.StoreHost = s.b.storeHost
	if times >= cfg.TransactionCheckMax {
		m.Topic = topicTransCheckMax
		m.QueueID = 0
		if s.b.topics.Find(topicTransCheckMax) == nil {
			s.b.topics.CreateInSendBack(topicTransCheckMax, 1, permRead, 0)
		}
		m.PropertiesString = message.EncodeProperties(m.Properties)
		s.put(m)
		s.b.logger.Info("transaction check: giving up a half message after transactionCheckMax checks",
			"msgId", x.Properties[message.PropertyUniqClientMessageIDKeyIdx], "checks", times)
		return true
	}
	m.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(times + 1)
	m.PropertiesString = message.EncodeProperties(m.Properties)
	r, ok := s.put(m)
	if !ok {
		return true // counted as examined; the original stays unresolved only in the log
	}
	group := x.Properties[message.PropertyProducerGroup]
	conn := s.b.producers.AnyConn(group)
	if conn == nil {
		s.b.logger.Debug("transaction check: no live producer of the group", "group", group)
		return true
	}
	copyExt := *x
	copyExt.Properties = m.Properties
	body, err := checkBody(&copyExt, r)
	if err != nil {
		s.b.logger.Warn("transaction check: encode check body", "err", err)
		return true
	}
	uniq := x.Properties[message.PropertyUniqClientMessageIDKeyIdx]
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(r.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(r.WroteOffset, 10),
		"msgId":                uniq,
		"transactionId":        uniq,
		"offsetMsgId":          message.OffsetMsgID(s.b.storeHost, r.WroteOffset),
		"topic":                topicTransHalf,
		"bname":                cfg.BrokerName,
	}, body)
	req.Flag |= remoting.FlagOneway
	if err := conn.InvokeOneway(req); err != nil {
		s.b.logger.Debug("transaction check: send", "group", group, "err", err)
	}
	return true
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
		s.b.logger.Warn("transaction check: store half message copy", "status", int(r.Status), "remark", r.Remark)
		return r, false
	}
	return r, true
}

// checkBody encodes the CHECK_TRANSACTION_STATE body: the record with topic
// and queue id set back to REAL_TOPIC/REAL_QID, at the copy's offsets.
func checkBody(x *message.Ext, r store.PutResult) ([]byte, error) {
	m := x.ToInner()
	if t := m.Properties[message.PropertyRealTopic]; t != "" {
		m.Topic = t
	}
	if q, err := strconv.Atoi(m.Properties[message.PropertyRealQueueID]); err == nil {
		m.QueueID = int32(q)
	}
	props := message.EncodeProperties(m.Properties)
	rec, err := message.AppendRecord(nil, m, props)
	if err != nil {
		return nil, err
	}
	message.PatchRecord(rec, r.QueueOffset, r.WroteOffset, r.StoreTimestamp)
	return rec, nil
}
