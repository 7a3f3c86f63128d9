package broker

import (
	"fmt"
	"strings"

	"github.com/spoolmq/spool/internal/systopic"
)

// Names of the system topics and prefixes; internal/systopic owns them.
const (
	topicAutoCreate       = systopic.AutoCreate
	topicSchedule         = systopic.Schedule
	topicBenchmark        = systopic.Benchmark
	topicTransHalf        = systopic.TransHalf
	topicTransOpHalf      = systopic.TransOpHalf
	topicTransCheckMax    = systopic.TransCheckMax
	topicSelfTest         = systopic.SelfTest
	topicOffsetMovedEvent = systopic.OffsetMovedEvent
	topicTraceDefault     = systopic.TraceDefault
	replyTopicSuffix      = systopic.ReplySuffix
	systemTopicPrefix     = systopic.SystemPrefix

	retryGroupTopicPrefix = systopic.RetryPrefix
	dlqGroupTopicPrefix   = systopic.DLQPrefix

	topicMaxLength      = 127
	retryTopicMaxLength = 255
	groupMaxLength      = 120

	faqURL = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
)

// isSystemTopic is RocketMQ's TopicValidator.isSystemTopic.
func isSystemTopic(t string) bool { return systopic.IsSystem(t) }

// isNotAllowedSendTopic reports the topics no producer may write.
func isNotAllowedSendTopic(t string) bool { return systopic.IsNotAllowedSend(t) }

func isRetryTopic(t string) bool { return systopic.IsRetry(t) }

func retryTopic(group string) string { return systopic.Retry(group) }

func dlqTopic(group string) string { return systopic.DLQ(group) }

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
