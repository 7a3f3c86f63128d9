package broker

import "github.com/spoolmq/spool/remoting"

// sendV2Keys maps SendMessageRequestHeader's long names to the one-letter
// names of SendMessageRequestHeaderV2 (codes 310 and 320).
var sendV2Keys = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
	"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
	"unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

// sendHeader is a decoded SEND_MESSAGE / SEND_MESSAGE_V2 /
// SEND_BATCH_MESSAGE header.
type sendHeader struct {
	producerGroup         string
	topic                 string
	defaultTopic          string
	defaultTopicQueueNums int32
	queueID               int32
	sysFlag               int32
	bornTimestamp         int64
	flag                  int32
	properties            string
	reconsumeTimes        int32
	unitMode              bool
	maxReconsumeTimes     int32
	hasMaxReconsumeTimes  bool
	batch                 bool
}

// parseSendHeader decodes the header of a send request. producerGroup,
// topic and queueId are required; the other fields RocketMQ marks required
// default to what the Go client sends when absent (TBW102, 4, 0, now).
func parseSendHeader(req *remoting.Command) (*sendHeader, error) {
	r := newExtReader(req)
	if req.Code == remoting.SendMessageV2 || req.Code == remoting.SendBatchMessage || req.Code == remoting.SendReplyMessageV2 {
		// Java maps V2 names for these codes; accept long names too.
		if _, ok := req.ExtFields["b"]; ok {
			r.alias = sendV2Keys
		}
	}
	h := &sendHeader{
		producerGroup:         r.str("producerGroup", true),
		topic:                 r.str("topic", true),
		defaultTopic:          r.str("defaultTopic", false),
		defaultTopicQueueNums: r.i32("defaultTopicQueueNums", false, 4),
		queueID:               r.i32("queueId", true, 0),
		sysFlag:               r.i32("sysFlag", false, 0),
		bornTimestamp:         r.i64("bornTimestamp", false, nowMillis()),
		flag:                  r.i32("flag", false, 0),
		properties:            r.str("properties", false),
		reconsumeTimes:        r.i32("reconsumeTimes", false, 0),
		unitMode:              r.boolean("unitMode", false),
		hasMaxReconsumeTimes:  r.has("maxReconsumeTimes"),
		maxReconsumeTimes:     r.i32("maxReconsumeTimes", false, 0),
		batch:                 r.boolean("batch", false),
	}
	if h.defaultTopic == "" {
		h.defaultTopic = topicAutoCreate
	}
	if r.err != nil {
		return nil, r.err
	}
	return h, nil
}
