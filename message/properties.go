package message

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

// Property names (RocketMQ MessageConst).
const (
	PropertyKeys                       = "KEYS"
	PropertyTags                       = "TAGS"
	PropertyWaitStoreMsgOK             = "WAIT"
	PropertyDelayTimeLevel             = "DELAY"
	PropertyRetryTopic                 = "RETRY_TOPIC"
	PropertyRealTopic                  = "REAL_TOPIC"
	PropertyRealQueueID                = "REAL_QID"
	PropertyTransactionPrepared        = "TRAN_MSG"
	PropertyProducerGroup              = "PGROUP"
	PropertyMinOffset                  = "MIN_OFFSET"
	PropertyMaxOffset                  = "MAX_OFFSET"
	PropertyBuyerID                    = "BUYER_ID"
	PropertyOriginMessageID            = "ORIGIN_MESSAGE_ID"
	PropertyTransferFlag               = "TRANSFER_FLAG"
	PropertyCorrectionFlag             = "CORRECTION_FLAG"
	PropertyMQ2Flag                    = "MQ2_FLAG"
	PropertyReconsumeTime              = "RECONSUME_TIME"
	PropertyMsgRegion                  = "MSG_REGION"
	PropertyTraceSwitch                = "TRACE_ON"
	PropertyUniqClientMessageIDKeyIdx  = "UNIQ_KEY"
	PropertyExtendUniqInfo             = "EXTEND_UNIQ_INFO"
	PropertyMaxReconsumeTimes          = "MAX_RECONSUME_TIMES"
	PropertyConsumeStartTimestamp      = "CONSUME_START_TIME"
	PropertyInnerNum                   = "INNER_NUM"
	PropertyInnerBase                  = "INNER_BASE"
	PropertyDupInfo                    = "DUP_INFO"
	PropertyCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyTranPreparedQueueOffset    = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionID              = "__transactionId__"
	PropertyTransactionCheckTimes      = "TRANSACTION_CHECK_TIMES"
	PropertyInstanceID                 = "INSTANCE_ID"
	PropertyCorrelationID              = "CORRELATION_ID"
	PropertyReplyToClient              = "REPLY_TO_CLIENT"
	PropertyMessageTTL                 = "TTL"
	PropertyReplyMessageArriveTime     = "ARRIVE_TIME"
	PropertyPushReplyTime              = "PUSH_REPLY_TIME"
	PropertyCluster                    = "CLUSTER"
	PropertyMessageType                = "MSG_TYPE"
	PropertyShardingKey                = "__SHARDINGKEY"
	PropertyTimerDeliverMS             = "TIMER_DELIVER_MS"
	PropertyTimerDelaySec              = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS               = "TIMER_DELAY_MS"
	PropertyTimerOutMS                 = "TIMER_OUT_MS"
	PropertyTimerEnqueueMS             = "TIMER_ENQUEUE_MS"
	PropertyTimerDequeueMS             = "TIMER_DEQUEUE_MS"
	PropertyTimerRollTimes             = "TIMER_ROLL_TIMES"
	PropertyTimerDelUniqKey            = "TIMER_DEL_UNIQKEY"
	PropertyTimerDelayLevel            = "TIMER_DELAY_LEVEL"
	PropertyBornHost                   = "__BORNHOST"
	PropertyBornTimestamp              = "BORN_TIMESTAMP"
	PropertyDLQOriginTopic             = "DLQ_ORIGIN_TOPIC"
	PropertyDLQOriginMessageID         = "DLQ_ORIGIN_MESSAGE_ID"
	PropertyCRC32                      = "__CRC32#"
	PropertyForwardQueueID             = "PROPERTY_FORWARD_QUEUE_ID"
	PropertyRedirect                   = "REDIRECT"
	PropertyTraceContext               = "TRACE_CONTEXT"
	PropertyPopCK                      = "POP_CK"
	PropertyFirstPopTime               = "1ST_POP_TIME"
)

// Separators of the property string.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// MaxPropertiesLen is the largest property string a record can carry (its
// length field is a signed 16-bit integer).
const MaxPropertiesLen = 32767

// AppendProperty appends one property pair, name 0x01 value 0x02.
func AppendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// EncodeProperties renders m as name 0x01 value 0x02 per pair, keys sorted
// so the result is deterministic. Pairs with an empty name or value are
// left out: no reader would keep them.
func EncodeProperties(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if k != "" && v != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.Grow(EncodedPropertiesLen(m))
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte(NameValueSeparator)
		sb.WriteString(m[k])
		sb.WriteByte(PropertySeparator)
	}
	return sb.String()
}

// EncodedPropertiesLen is len(EncodeProperties(m)), computed without
// building the string.
func EncodedPropertiesLen(m map[string]string) int {
	n := 0
	for k, v := range m {
		if k != "" && v != "" {
			n += len(k) + len(v) + 2
		}
	}
	return n
}

// DecodeProperties parses a property string with Java's rule: split on
// 0x02; keep a segment whose first 0x01 has a non-empty name before it and a
// non-empty value after it. A later duplicate name wins. The result is never
// nil.
func DecodeProperties(s string) map[string]string {
	m := make(map[string]string, strings.Count(s, string(PropertySeparator))+1)
	forEachProperty(s, func(k, v string) bool {
		m[k] = v
		return true
	})
	return m
}

// LookupProperty finds name in a property string without building a map,
// with the same rule as DecodeProperties (the last occurrence wins).
func LookupProperty(s, name string) (string, bool) {
	var val string
	found := false
	forEachProperty(s, func(k, v string) bool {
		if k == name {
			val, found = v, true
		}
		return true
	})
	return val, found
}

// RangeProperties calls fn for each pair of a property string that
// DecodeProperties would keep, in order (so a later duplicate comes later),
// until fn returns false. It allocates nothing; name and value alias s.
func RangeProperties(s string, fn func(name, value string) bool) { forEachProperty(s, fn) }

// forEachProperty calls fn for each pair kept by Java's parsing rule, until
// fn returns false.
func forEachProperty(s string, fn func(k, v string) bool) {
	for len(s) > 0 {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		sep := strings.IndexByte(seg, NameValueSeparator)
		if sep <= 0 || sep == len(seg)-1 {
			continue
		}
		if !fn(seg[:sep], seg[sep+1:]) {
			return
		}
	}
}

// TagsHashCode is Java's String.hashCode of tags (h = 31*h + c over UTF-16
// code units, 32-bit overflow), sign-extended to 64 bits; "" gives 0.
// Invalid UTF-8 bytes count as U+FFFD, as Java's decoder would read them.
func TagsHashCode(tags string) int64 {
	var h int32
	for i := 0; i < len(tags); {
		c := tags[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(tags[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
		} else {
			h = 31*h + int32(r)
		}
	}
	return int64(h)
}

// PropertyPairBytes is PropertyBytes of two names in one scan of props:
// the value of each, nil where the name is absent or its value empty.
func PropertyPairBytes(props []byte, a, b string) (va, vb []byte) {
	for len(props) > 0 {
		end := bytes.IndexByte(props, PropertySeparator)
		seg := props
		if end >= 0 {
			seg, props = props[:end], props[end+1:]
		} else {
			props = nil
		}
		if v, ok := propertyValue(seg, a); ok {
			va = v
		} else if v, ok := propertyValue(seg, b); ok {
			vb = v
		}
	}
	return va, vb
}

// propertyValue is seg's non-empty value when seg is name's entry.
func propertyValue(seg []byte, name string) ([]byte, bool) {
	if len(seg) > len(name)+1 && string(seg[:len(name)]) == name && seg[len(name)] == NameValueSeparator {
		return seg[len(name)+1:], true
	}
	return nil, false
}

// PropertyBytes is LookupProperty over an encoded property string held as
// bytes: it allocates nothing and the value aliases props.
func PropertyBytes(props []byte, name string) ([]byte, bool) {
	var val []byte
	found := false
	for len(props) > 0 {
		end := bytes.IndexByte(props, PropertySeparator)
		seg := props
		if end >= 0 {
			seg, props = props[:end], props[end+1:]
		} else {
			props = nil
		}
		if v, ok := propertyValue(seg, name); ok {
			val, found = v, true
		}
	}
	return val, found
}
