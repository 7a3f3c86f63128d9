package broker

import (
	"fmt"
	"strings"
)

// Names of the system topics and prefixes (RocketMQ TopicValidator, MixAll).
const (
	topicAutoCreate       = "TBW102"
	topicSchedule         = "SCHEDULE_TOPIC_XXXX"
	topicBenchmark        = "BenchmarkTest"
	topicTransHalf        = "RMQ_SYS_TRANS_HALF_TOPIC"
	topicTransOpHalf      = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	topicTransCheckMax    = "TRANS_CHECK_MAX_TIME_TOPIC"
	topicSelfTest         = "SELF_TEST_TOPIC"
	topicOffsetMovedEvent = "OFFSET_MOVED_EVENT"
	topicTraceDefault     = "RMQ_SYS_TRACE_TOPIC"
	replyTopicSuffix      = "_REPLY_TOPIC"
	systemTopicPrefix     = "rmq_sys_"

	retryGroupTopicPrefix = "%RETRY%"
	dlqGroupTopicPrefix   = "%DLQ%"

	topicMaxLength      = 127
	retryTopicMaxLength = 255
	groupMaxLength      = 120

	faqURL = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
)

// notAllowedSendTopics may never be written by a producer.
var notAllowedSendTopics = map[string]bool{
	topicSchedule: true, topicTransHalf: true, topicTransOpHalf: true, topicTransCheckMax: true,
	topicSelfTest: true, topicOffsetMovedEvent: true,
}

// isSystemTopic is RocketMQ's TopicValidator.isSystemTopic. It runs on
// every put (the day totals leave system topics out), so it is a switch,
// which compares lengths before bytes, rather than a map that hashes.
func isSystemTopic(t string) bool {
	switch t {
	case topicAutoCreate, topicSchedule, topicBenchmark, topicTransHalf, topicTraceDefault,
		topicTransOpHalf, topicTransCheckMax, topicSelfTest, topicOffsetMovedEvent:
		return true
	}
	return strings.HasPrefix(t, systemTopicPrefix)
}

func isNotAllowedSendTopic(t string) bool { return notAllowedSendTopics[t] }

func isRetryTopic(t string) bool { return strings.HasPrefix(t, retryGroupTopicPrefix) }

func retryTopic(group string) string { return retryGroupTopicPrefix + group }

func dlqTopic(group string) string { return dlqGroupTopicPrefix + group }

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

// validateTopic returns "" for a legal topic name, else the remark
// RocketMQ answers with (INVALID_PARAMETER).
func validateTopic(t string) string {
	if strings.TrimSpace(t) == "" {
		return "The specified topic is blank."
	}
	if !validNameChars(t) {
		return fmt.Sprintf("The specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", t)
	}
	limit := topicMaxLength
	if strings.HasPrefix(t, retryGroupTopicPrefix) || strings.HasPrefix(t, dlqGroupTopicPrefix) {
		limit = retryTopicMaxLength
	}
	if len(t) > limit {
		return fmt.Sprintf("The specified topic is longer than topic max length %d.", limit)
	}
	return ""
}

// validateGroup returns "" for a legal group name, else a remark.
func validateGroup(g string) string {
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
