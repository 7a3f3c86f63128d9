package datapath

import (
	"strconv"
	"strings"

	"github.com/spoolmq/spool/message"
)

// DelayLevelOf returns the DELAY property as a level (0 when absent or not
// a number).
func DelayLevelOf(props map[string]string) int {
	v, ok := props[message.PropertyDelayTimeLevel]
	return delayLevel(v, ok)
}

// delayLevelOfString is DelayLevelOf on a property string, without a map.
func delayLevelOfString(props string) int {
	return delayLevel(message.LookupProperty(props, message.PropertyDelayTimeLevel))
}

func delayLevel(v string, ok bool) int {
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0
	}
	return n
}

// ApplyDelay rewrites a message with DELAY > 0 into SCHEDULE_TOPIC_XXXX
// (queue level-1, REAL_TOPIC/REAL_QID added, tag field = delivery time).
// Half messages and rollbacks are left alone. It reports whether the
// message was rewritten.
func (d *Path) ApplyDelay(m *message.Inner) bool {
	t := message.TransactionValue(m.SysFlag)
	if t != message.TransactionNotType && t != message.TransactionCommitType {
		return false
	}
	level := DelayLevelOf(m.Properties)
	if level <= 0 || len(d.delayLevels) == 0 {
		return false
	}
	level = min(level, len(d.delayLevels))
	m.Properties[message.PropertyDelayTimeLevel] = strconv.Itoa(level)
	for _, k := range []string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		delete(m.Properties, k)
	}
	stripMarkers(m.Properties)
	m.Properties[message.PropertyRealTopic] = m.Topic
	m.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic = topicSchedule
	m.QueueID = int32(level - 1)
	m.TagsCode = d.nowMillis() + d.delayLevels[level-1].Milliseconds()
	return true
}

// hasTimerProperty reports whether a 5.x timer property is set.
func hasTimerProperty(props map[string]string) bool {
	for _, k := range []string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if _, ok := props[k]; ok {
			return true
		}
	}
	return false
}
