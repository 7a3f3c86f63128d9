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
	replyTopicSuffix      = systopic.ReplySuffix
)

// isSystemTopic is RocketMQ's TopicValidator.isSystemTopic.
func isSystemTopic(t string) bool { return systopic.IsSystem(t) }

func retryTopic(group string) string { return systopic.Retry(group) }
