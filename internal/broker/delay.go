package broker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/message"
)

// defaultDelayLevels is RocketMQ's messageDelayLevel default.
const defaultDelayLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// parseDelayLevels parses messageDelayLevel: space-separated durations with
// unit s, m, h or d.
func parseDelayLevels(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		s = defaultDelayLevels
	}
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: messageDelayLevel entry %q", ErrConfig, f)
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if unit == 0 || err != nil || n < 0 {
			return nil, fmt.Errorf("%w: messageDelayLevel entry %q (want a number with unit s, m, h or d)", ErrConfig, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) > scheduleQueueNums {
		return nil, fmt.Errorf("%w: messageDelayLevel has %d levels, at most %d are supported", ErrConfig, len(out), scheduleQueueNums)
	}
	return out, nil
}

// delayLevelOf returns the DELAY property as a level (0 when absent or not
// a number).
func delayLevelOf(props map[string]string) int {
	v, ok := props[message.PropertyDelayTimeLevel]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0
	}
	return n
}

// applyDelay rewrites a message with DELAY > 0 into SCHEDULE_TOPIC_XXXX
// (queue level-1, REAL_TOPIC/REAL_QID added, tag field = delivery time).
// Half messages and rollbacks are left alone. It reports whether the
// message was rewritten.
func (b *Broker) applyDelay(m *message.Inner) bool {
	t := message.TransactionValue(m.SysFlag)
	if t != message.TransactionNotType && t != message.TransactionCommitType {
		return false
	}
	level := delayLevelOf(m.Properties)
	if level <= 0 || len(b.delayLevels) == 0 {
		return false
	}
	level = min(level, len(b.delayLevels))
	m.Properties[message.PropertyDelayTimeLevel] = strconv.Itoa(level)
	for _, k := range []string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		delete(m.Properties, k)
	}
	stripMarkers(m.Properties)
	m.Properties[message.PropertyRealTopic] = m.Topic
	m.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic = topicSchedule
	m.QueueID = int32(level - 1)
	m.TagsCode = nowMillis() + b.delayLevels[level-1].Milliseconds()
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
