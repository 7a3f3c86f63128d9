package processor

import (
	"encoding/json"
	"fmt"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// lockBatchBody is the LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body.
type lockBatchBody struct {
	ConsumerGroup  string                 `json:"consumerGroup"`
	ClientID       string                 `json:"clientId"`
	OnlyThisBroker bool                   `json:"onlyThisBroker"`
	MQSet          []clients.MessageQueue `json:"mqSet"`
}

func decodeLockBody(req *remoting.Command) (*lockBatchBody, *remoting.Command) {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, response(req, remoting.SystemError, fmt.Sprintf("%v: lock batch body: %v", ErrBadBody, err))
	}
	if body.ConsumerGroup == "" || body.ClientID == "" {
		return nil, response(req, remoting.InvalidParameter, "lock batch body needs consumerGroup and clientId")
	}
	return &body, nil
}

// HandleLockBatchMQ locks queues for an orderly consumer and answers the
// ones it now holds.
func (p *Processor) HandleLockBatchMQ(c *transport.Conn, req *remoting.Command) *remoting.Command {
	body, errResp := decodeLockBody(req)
	if errResp != nil {
		return errResp
	}
	locked := p.locks.TryLockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	out, err := json.Marshal(map[string][]clients.MessageQueue{"lockOKMQSet": locked})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.Body = out
	return resp
}

// HandleUnlockBatchMQ releases queues held by the client.
func (p *Processor) HandleUnlockBatchMQ(c *transport.Conn, req *remoting.Command) *remoting.Command {
	body, errResp := decodeLockBody(req)
	if errResp != nil {
		return errResp
	}
	p.locks.UnlockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	return response(req, remoting.Success, "")
}
