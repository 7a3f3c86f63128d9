package metadata

// SubscriptionGroupConfig is a consumer group's configuration, in RocketMQ's
// JSON form (subscriptionGroup.json and GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
type SubscriptionGroupConfig struct {
	GroupName                      string            `json:"groupName"`
	ConsumeEnable                  bool              `json:"consumeEnable"`
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`
	RetryQueueNums                 int               `json:"retryQueueNums"`
	RetryMaxTimes                  int               `json:"retryMaxTimes"`
	BrokerID                       int64             `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	GroupSysFlag                   int               `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int               `json:"consumeTimeoutMinute"`
	Attributes                     map[string]string `json:"attributes"`
}

// NewSubscriptionGroupConfig returns a group config with RocketMQ's defaults.
func NewSubscriptionGroupConfig(group string) *SubscriptionGroupConfig {
	return &SubscriptionGroupConfig{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIdsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
		Attributes:                     map[string]string{},
	}
}
