package broker

import "github.com/spoolmq/spool/internal/systopic"

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

	faqURL = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
)

// isSystemTopic is RocketMQ's TopicValidator.isSystemTopic.
func isSystemTopic(t string) bool { return systopic.IsSystem(t) }

// isNotAllowedSendTopic reports the topics no producer may write.
func isNotAllowedSendTopic(t string) bool { return systopic.IsNotAllowedSend(t) }

func isRetryTopic(t string) bool { return systopic.IsRetry(t) }

func retryTopic(group string) string { return systopic.Retry(group) }

func dlqTopic(group string) string { return systopic.DLQ(group) }

// validateTopic and validateGroup are the name rules of internal/systopic.
func validateTopic(t string) string { return systopic.ValidateTopic(t) }

func validateGroup(g string) string { return systopic.ValidateGroup(g) }
