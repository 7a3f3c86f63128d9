package datapath

import (
	"fmt"
	"strconv"

	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleEndTransaction commits or rolls back a half message. Commit stores
// the real message (REAL_TOPIC/REAL_QID, transaction type commit,
// preparedTransactionOffset = the half record's offset); both record an op
// entry in RMQ_SYS_TRANS_OP_HALF_TOPIC (tag "d", body = half queue offset).
// State "unknown" (0) gets no answer; the transaction check service asks
// the producer later.
func (d *Path) HandleEndTransaction(c *transport.Conn, req *remoting.Command) transport.Reply {
	r := processor.NewHeader(req)
	group := r.Str("producerGroup", true)
	tranOffset := r.I64("tranStateTableOffset", true, 0)
	clOffset := r.I64("commitLogOffset", true, 0)
	state := r.I32("commitOrRollback", true, 0)
	fromCheck := r.Str("fromTransactionCheck", false) == "true"
	if r.Err() != nil {
		return transport.Respond(badHeader(req, r.Err()))
	}
	switch state {
	case message.TransactionNotType:
		return transport.NoReply()
	case message.TransactionCommitType, message.TransactionRollbackType:
	default:
		return transport.Respond(remoting.NewResponse(req, remoting.InvalidParameter, fmt.Sprintf("commitOrRollback %d is not 0, 8 or 12", state)))
	}
	if state == message.TransactionRollbackType {
		// A rollback of an indexed half needs no read: the index knows
		// its group and offsets.
		if h, ok := d.tx.Index().Get(tranOffset); ok && h.Phy == clOffset && h.Group == group &&
			(fromCheck || h.ImmunityMs == 0) {
			rs := c.Defer(req)
			d.tx.PutOp(tranOffset, func(code int32, remark string) {
				if code == remoting.Success {
					d.stats.IncTransaction(h.Topic, false)
				}
				d.replyLater(rs, remoting.NewResponse(req, code, remark))
			})
			return transport.Later(rs)
		}
	}
	rec, cached := d.tx.TakeChecked(clOffset)
	if !cached {
		var err error
		if rec, err = d.store.LookMessageByOffset(clOffset); err != nil {
			return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("Find prepared transaction message failed: %v", err)))
		}
	}
	ext, err := message.DecodeRecord(rec)
	if err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("Find prepared transaction message failed: %v", err)))
	}
	switch {
	case ext.Topic != topicTransHalf:
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "Find prepared transaction message failed: the record is not a half message"))
	case ext.Properties[message.PropertyProducerGroup] != group:
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "The producer group wrong"))
	case ext.QueueOffset != tranOffset:
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "The transaction state table offset wrong"))
	case ext.PhysicalOffset != clOffset:
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "The commit log offset wrong"))
	}
	// As RocketMQ: an immunity time below transactionTimeOut counts as
	// transactionTimeOut.
	if ms := transaction.ImmunityMillis(ext.Properties); ms > 0 && !fromCheck &&
		d.nowMillis()-ext.BornTimestamp > max(ms, d.config().TransactionTimeOut) {
		ms = max(ms, d.config().TransactionTimeOut)
		return transport.Respond(remoting.NewResponse(req, remoting.IllegalOperation, fmt.Sprintf(
			"the half message is older than its CHECK_IMMUNITY_TIME_IN_SECONDS (%d ms); only an answer to a check may end it", ms)))
	}
	if state == message.TransactionRollbackType {
		rs := c.Defer(req)
		d.tx.PutOp(ext.QueueOffset, func(code int32, remark string) {
			if code == remoting.Success {
				d.stats.IncTransaction(ext.Properties[message.PropertyRealTopic], false)
			}
			d.replyLater(rs, remoting.NewResponse(req, code, remark))
		})
		return transport.Later(rs)
	}
	m := ext.ToInner()
	p := m.Properties
	m.Topic = p[message.PropertyRealTopic]
	qid, err := strconv.Atoi(p[message.PropertyRealQueueID])
	if m.Topic == "" || err != nil {
		return transport.Respond(remoting.NewResponse(req, remoting.SystemError, "the half message lacks REAL_TOPIC/REAL_QID"))
	}
	m.QueueID = int32(qid)
	delete(p, message.PropertyRealTopic)
	delete(p, message.PropertyRealQueueID)
	delete(p, message.PropertyTransactionPrepared)
	m.SysFlag = message.ResetTransactionValue(m.SysFlag, message.TransactionCommitType)
	m.PreparedTransactionOffset = ext.PhysicalOffset
	m.TagsCode = message.TagsHashCode(p[message.PropertyTags])
	d.ApplyDelay(m)
	m.PropertiesString = message.EncodeProperties(p)
	// Through the send path's put, so a committed timer message goes to
	// the timing wheel; if the wheel refuses it the half stays pending, as
	// in RocketMQ.
	rs := c.Defer(req)
	err = d.PutMessage(m, func(pr store.PutResult) {
		d.countPut(m.Topic, pr)
		code, remark := PutStatusCode(pr)
		if code != remoting.Success && code != remoting.FlushDiskTimeout {
			d.replyLater(rs, remoting.NewResponse(req, code, remark))
			return
		}
		d.tx.PutOp(ext.QueueOffset, func(code int32, remark string) {
			if code == remoting.Success {
				d.stats.IncTransaction(m.Topic, true)
			}
			d.replyLater(rs, remoting.NewResponse(req, code, remark))
		})
	})
	if err != nil {
		return transport.Respond(remoting.NewResponse(req, timer.ResponseCode(err), err.Error()))
	}
	return transport.Later(rs)
}
