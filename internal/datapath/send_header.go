package datapath

import (
	"strings"

	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/remoting"
)

// sendV2Keys maps SendMessageRequestHeader's long names to the one-letter
// names of SendMessageRequestHeaderV2 (codes 310 and 320).
var sendV2Keys = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
	"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
	"unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

// Send header fields, in the order of the V2 letters ('a' + index).
const (
	sfProducerGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultTopicQueueNums
	sfQueueID
	sfSysFlag
	sfBornTimestamp
	sfFlag
	sfProperties
	sfReconsumeTimes
	sfUnitMode
	sfMaxReconsumeTimes
	sfBatch
	sfBname
	sendFieldCount
)

// sendFieldNames are the V1 (long) names, indexed by field.
var sendFieldNames = [sendFieldCount]string{
	"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
	"flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname",
}

// sendFieldShort are the V2 one-letter names, indexed by field.
var sendFieldShort = [sendFieldCount]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}

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

// sendFieldIndex is the index of send field k by its one-letter name
// (short) or its long name, -1 for another key (bname, which is not read,
// included).
func sendFieldIndex(k string, short bool) int {
	if !short {
		return longSendField(k)
	}
	if len(k) == 1 && k[0] >= 'a' && k[0] < 'a'+sfBname {
		return int(k[0] - 'a')
	}
	return -1
}

// longSendField is the index of a send field's long name, -1 for another
// key (bname, which is not read, included).
func longSendField(k string) int {
	switch k {
	case "producerGroup":
		return sfProducerGroup
	case "topic":
		return sfTopic
	case "defaultTopic":
		return sfDefaultTopic
	case "defaultTopicQueueNums":
		return sfDefaultTopicQueueNums
	case "queueId":
		return sfQueueID
	case "sysFlag":
		return sfSysFlag
	case "bornTimestamp":
		return sfBornTimestamp
	case "flag":
		return sfFlag
	case "properties":
		return sfProperties
	case "reconsumeTimes":
		return sfReconsumeTimes
	case "unitMode":
		return sfUnitMode
	case "maxReconsumeTimes":
		return sfMaxReconsumeTimes
	case "batch":
		return sfBatch
	}
	return -1
}

// parseSendHeader decodes the header of a send request. producerGroup,
// topic and queueId are required; the other fields RocketMQ marks required
// default to what the Go client sends when absent (TBW102, 4, 0, now
// read from the broker's clock).
//
// Each field is read by the name its code uses (codes 310, 320 and 324
// use the V2 one-letter names when "b" is present, long names otherwise):
// from the inline table in one pass over it, from the map with a lookup
// per field (cheaper than ranging over the map); there is no second
// lookup through the alias table.
func parseSendHeader(req *remoting.Command, now func() int64) (*sendHeader, error) {
	h := &sendHeader{}
	if _, err := parseSendHeaderInto(req, now, h, 0); err != nil {
		return nil, err
	}
	return h, nil
}

// parseSendHeaderInto is parseSendHeader into h. With propsRoom > 0 it
// also returns a buffer holding the properties' bytes with that much room
// to spare (h.properties shares them), so that the stored property string
// can be built in place.
func parseSendHeaderInto(req *remoting.Command, now func() int64, h *sendHeader, propsRoom int) ([]byte, error) {
	return parseSendHeaderIn(req, now, h, propsRoom, nil)
}

// parseSendHeaderIn is parseSendHeaderInto with the properties' buffer
// taken from scratch when they and propsRoom fit its capacity
// (ExtWithRoomIn).
func parseSendHeaderIn(req *remoting.Command, now func() int64, h *sendHeader, propsRoom int, scratch []byte) ([]byte, error) {
	r := processor.NewHeader(req)
	names := &sendFieldNames
	if req.Code == remoting.SendMessageV2 || req.Code == remoting.SendBatchMessage || req.Code == remoting.SendReplyMessageV2 {
		// Java maps V2 names for these codes; accept long names too.
		if _, ok := req.LookupExt("b"); ok {
			r.Alias(sendV2Keys) // error remarks name both
			names = &sendFieldShort
		}
	}
	var vals [sendFieldCount]string
	var have [sendFieldCount]bool
	var propsBuf []byte
	// The properties, with room for the broker's, are decoded once,
	// straight into their buffer.
	withRoom := propsRoom > 0
	var props remoting.ExtValue
	short := names == &sendFieldShort
	inline := req.RangeExtInline(func(k string, v remoting.ExtValue) {
		i := sendFieldIndex(k, short)
		switch {
		case i < 0:
		case i == sfProperties && withRoom:
			props, have[i] = v, true
		default:
			vals[i], have[i] = v.String(), true
		}
	})
	switch {
	case !inline:
		for i := range sfBname { // bname is not read
			if i == sfProperties && withRoom {
				vals[i], propsBuf, have[i] = req.ExtWithRoomIn(names[i], propsRoom, scratch)
			} else {
				vals[i], have[i] = req.LookupExt(names[i])
			}
		}
	case have[sfProperties] && withRoom:
		vals[sfProperties], propsBuf = props.WithRoomIn(propsRoom, scratch)
	}
	str := func(i int, required bool) string { return r.StrOf(sendFieldNames[i], vals[i], have[i], required) }
	i32 := func(i int, required bool, def int32) int32 {
		return r.I32Of(sendFieldNames[i], vals[i], have[i], required, def)
	}
	*h = sendHeader{
		producerGroup:         str(sfProducerGroup, true),
		topic:                 str(sfTopic, true),
		defaultTopic:          str(sfDefaultTopic, false),
		defaultTopicQueueNums: i32(sfDefaultTopicQueueNums, false, 4),
		queueID:               i32(sfQueueID, true, 0),
		sysFlag:               i32(sfSysFlag, false, 0),
	}
	// The default is read only when needed: the clock is not free.
	if v := vals[sfBornTimestamp]; have[sfBornTimestamp] && strings.TrimSpace(v) != "" {
		h.bornTimestamp = r.I64Of(sendFieldNames[sfBornTimestamp], v, true, false, 0)
	} else {
		h.bornTimestamp = now()
	}
	h.flag = i32(sfFlag, false, 0)
	h.properties = vals[sfProperties]
	h.reconsumeTimes = i32(sfReconsumeTimes, false, 0)
	h.unitMode = processor.BoolOf(vals[sfUnitMode], have[sfUnitMode], false)
	h.hasMaxReconsumeTimes = have[sfMaxReconsumeTimes] && vals[sfMaxReconsumeTimes] != ""
	h.maxReconsumeTimes = i32(sfMaxReconsumeTimes, false, 0)
	h.batch = processor.BoolOf(vals[sfBatch], have[sfBatch], false)
	if h.defaultTopic == "" {
		h.defaultTopic = topicAutoCreate
	}
	return propsBuf, r.Err()
}
