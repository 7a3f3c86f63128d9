package datapath

import (
	"encoding/json"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
)

// offsetMovedEvent is the body RocketMQ stores in OFFSET_MOVED_EVENT when
// a pull is answered PULL_OFFSET_MOVED, for operators' tooling.
type offsetMovedEvent struct {
	ConsumerGroup string               `json:"consumerGroup"`
	MessageQueue  clients.MessageQueue `json:"messageQueue"`
	OffsetRequest int64                `json:"offsetRequest"`
	OffsetNew     int64                `json:"offsetNew"`
}

// recordOffsetMoved stores an OFFSET_MOVED_EVENT message (fire and
// forget; the pull is answered regardless).
func (d *Path) recordOffsetMoved(h *pullHeader, offsetNew int64) {
	cfg := d.config()
	body, err := json.Marshal(&offsetMovedEvent{
		ConsumerGroup: h.consumerGroup,
		MessageQueue:  clients.MessageQueue{Topic: h.topic, BrokerName: cfg.BrokerName, QueueID: int(h.queueID)},
		OffsetRequest: h.queueOffset,
		OffsetNew:     offsetNew,
	})
	if err != nil {
		return
	}
	props := map[string]string{message.PropertyTags: h.consumerGroup, message.PropertyWaitStoreMsgOK: "false"}
	m := &message.Inner{
		Topic:            topicOffsetMovedEvent,
		Body:             body,
		Properties:       props,
		PropertiesString: message.EncodeProperties(props),
		BornTimestamp:    d.nowMillis(),
		BornHost:         d.storeHost(),
		StoreHost:        d.storeHost(),
		TagsCode:         message.TagsHashCode(h.consumerGroup),
	}
	d.store.PutMessage(m, func(r store.PutResult) {
		if r.Status != store.PutOK {
			d.logger.Debug("store OFFSET_MOVED_EVENT", "status", int(r.Status), "remark", r.Remark)
		}
	})
}
