// Package systopic owns the names of RocketMQ's system topics, groups and
// topic prefixes (TopicValidator, MixAll in RocketMQ), the rules that
// classify a topic by its name and the rules for legal topic and group
// names (ValidateTopic, ValidateGroup). The broker, the store and the timer all
// need them, and each once spelled them on its own; they are wire- and
// disk-visible vocabulary, so they live in one leaf that all three import,
// not in any one of them.
//
// Two classifications exist and both are kept as they are: IsSystem is
// RocketMQ's TopicValidator.isSystemTopic (the broker's send and admin
// checks), and OutOfDayTotals is the store's rule for leaving topics out of
// its "without system topics" day figures.
//
// It imports nothing of Spool and must never do: every package may import
// it.
package systopic

import (
	"fmt"
	"strings"
)

// System topics.
const (
	// AutoCreate is the template topic for automatic topic creation.
	AutoCreate = "TBW102"
	// Schedule holds delayed messages, one queue per delay level.
	Schedule = "SCHEDULE_TOPIC_XXXX"
	// Benchmark is the topic RocketMQ's benchmark tools write.
	Benchmark = "BenchmarkTest"
	// TransHalf holds half (prepared) transaction messages.
	TransHalf = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TransOpHalf holds the op records of ended transactions.
	TransOpHalf = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TransCheckMax receives half messages checked too often.
	TransCheckMax = "TRANS_CHECK_MAX_TIME_TOPIC"
	// SelfTest is RocketMQ's self-test topic.
	SelfTest = "SELF_TEST_TOPIC"
	// OffsetMovedEvent receives offset-moved events.
	OffsetMovedEvent = "OFFSET_MOVED_EVENT"
	// TraceDefault is the default message-trace topic.
	TraceDefault = "RMQ_SYS_TRACE_TOPIC"
	// WheelTimer holds timer messages until the timing wheel fires them.
	WheelTimer = "rmq_sys_wheel_timer"
)

// Prefixes and suffixes of derived and system topic names.
const (
	// SystemPrefix starts the names of further system topics.
	SystemPrefix = "rmq_sys_"
	// SystemPrefixUpper starts RocketMQ's upper-case system topics
	// (RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRACE_TOPIC, ...).
	SystemPrefixUpper = "RMQ_SYS_"
	// RetryPrefix starts a group's retry topic.
	RetryPrefix = "%RETRY%"
	// DLQPrefix starts a group's dead-letter topic.
	DLQPrefix = "%DLQ%"
	// ReplySuffix ends a cluster's reply topic.
	ReplySuffix = "_REPLY_TOPIC"
)

// TransGroup is the system group whose offset in TransHalf records how
// far transaction checks have gone (RocketMQ's CID_RMQ_SYS_TRANS).
const TransGroup = "CID_RMQ_SYS_TRANS"

// IsSystem is RocketMQ's TopicValidator.isSystemTopic. It runs on every
// put, so it is a switch, which compares lengths before bytes, rather
// than a map that hashes.
func IsSystem(t string) bool {
	switch t {
	case AutoCreate, Schedule, Benchmark, TransHalf, TraceDefault,
		TransOpHalf, TransCheckMax, SelfTest, OffsetMovedEvent:
		return true
	}
	return strings.HasPrefix(t, SystemPrefix)
}

// IsNotAllowedSend reports the topics no producer may write
// (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
func IsNotAllowedSend(t string) bool {
	switch t {
	case Schedule, TransHalf, TransOpHalf, TransCheckMax, SelfTest, OffsetMovedEvent:
		return true
	}
	return false
}

// OutOfDayTotals reports the topics the store leaves out of its day
// totals "without system topics": either system prefix, the schedule and
// auto-create topics, retry and dead-letter topics.
func OutOfDayTotals(t string) bool {
	return strings.HasPrefix(t, SystemPrefix) || strings.HasPrefix(t, SystemPrefixUpper) || t == Schedule ||
		t == AutoCreate || strings.HasPrefix(t, RetryPrefix) || strings.HasPrefix(t, DLQPrefix)
}

// IsRetry reports a retry topic.
func IsRetry(t string) bool { return strings.HasPrefix(t, RetryPrefix) }

// IsDLQ reports a dead-letter topic.
func IsDLQ(t string) bool { return strings.HasPrefix(t, DLQPrefix) }

// Retry is group's retry topic.
func Retry(group string) string { return RetryPrefix + group }

// DLQ is group's dead-letter topic.
func DLQ(group string) string { return DLQPrefix + group }

// Name limits of TopicValidator.
const (
	topicMaxLength      = 127
	retryTopicMaxLength = 255
	groupMaxLength      = 120
)

// validNameChars reports whether s uses only ^[%|a-zA-Z0-9_-]+$.
func validNameChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '%', c == '|', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateTopic returns "" for a legal topic name, else the remark
// RocketMQ answers with (INVALID_PARAMETER).
func ValidateTopic(t string) string {
	if strings.TrimSpace(t) == "" {
		return "The specified topic is blank."
	}
	if !validNameChars(t) {
		return fmt.Sprintf("The specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", t)
	}
	limit := topicMaxLength
	if strings.HasPrefix(t, RetryPrefix) || strings.HasPrefix(t, DLQPrefix) {
		limit = retryTopicMaxLength
	}
	if len(t) > limit {
		return fmt.Sprintf("The specified topic is longer than topic max length %d.", limit)
	}
	return ""
}

// ValidateGroup returns "" for a legal group name, else a remark.
func ValidateGroup(g string) string {
	if strings.TrimSpace(g) == "" {
		return "the specified group is blank"
	}
	if !validNameChars(g) {
		return fmt.Sprintf("the specified group[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", g)
	}
	if len(g) > groupMaxLength {
		return fmt.Sprintf("the specified group[%s] is longer than group max length %d", g, groupMaxLength)
	}
	return ""
}
