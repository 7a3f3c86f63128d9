package clients

// ChannelView is a copy of one connected client's channel.
type ChannelView struct {
	Group    string
	ClientID string
	Language string
	Version  int32
	// ConsumeType is the consumer group's consume type
	// (CONSUME_PASSIVELY, CONSUME_ACTIVELY); empty for producers.
	ConsumeType string
	// MessageModel is the consumer group's model; empty for producers.
	MessageModel string
}

// ProducerChannels lists the producer channels of every group.
func (m *ProducerManager) ProducerChannels() []ChannelView {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []ChannelView
	for g, chans := range m.groups {
		for _, ch := range chans {
			out = append(out, ChannelView{Group: g, ClientID: ch.ClientID, Language: ch.Language, Version: ch.Version})
		}
	}
	return out
}

// ConsumerChannels lists the consumer channels of every group.
func (m *ConsumerManager) ConsumerChannels() []ChannelView {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []ChannelView
	for g, gi := range m.groups {
		for _, ch := range gi.channels {
			out = append(out, ChannelView{Group: g, ClientID: ch.ClientID, Language: ch.Language, Version: ch.Version,
				ConsumeType: gi.consumeType, MessageModel: gi.messageModel})
		}
	}
	return out
}
