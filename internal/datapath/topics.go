package datapath

import "github.com/spoolmq/spool/internal/systopic"

// Names of the system topics the data path writes or refuses;
// internal/systopic owns them and the topic rules.
const (
	topicAutoCreate       = systopic.AutoCreate
	topicSchedule         = systopic.Schedule
	topicTransHalf        = systopic.TransHalf
	topicTransOpHalf      = systopic.TransOpHalf
	topicOffsetMovedEvent = systopic.OffsetMovedEvent
	retryGroupTopicPrefix = systopic.RetryPrefix

	faqURL = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
)

func validateTopic(t string) string { return systopic.ValidateTopic(t) }

func isNotAllowedSendTopic(t string) bool { return systopic.IsNotAllowedSend(t) }

func isRetryTopic(t string) bool { return systopic.IsRetry(t) }

func retryTopic(group string) string { return systopic.Retry(group) }

func dlqTopic(group string) string { return systopic.DLQ(group) }
