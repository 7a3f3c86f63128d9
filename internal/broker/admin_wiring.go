package broker

import (
	"time"

	"github.com/spoolmq/spool/internal/processor"
)

// adminRelayTimeout bounds a request relayed to a client (RocketMQ's
// 10 s); tests shorten it.
var adminRelayTimeout = 10 * time.Second

// adminDeps is what the broker gives the operations requests.
func adminDeps(b *Broker) processor.AdminDeps {
	return processor.AdminDeps{
		Store:     b.store,
		Topics:    b.topics,
		Groups:    b.groups,
		Offsets:   b.offsets,
		Consumers: b.consumers,
		Producers: b.producers,
		Config: func() processor.AdminConfig {
			cfg := b.config()
			return processor.AdminConfig{BrokerName: cfg.BrokerName, BrokerClusterName: cfg.BrokerClusterName, BrokerAddr: b.Addr()}
		},
		Clock:         b.clock,
		Logger:        b.logger,
		HoldRoute:     b.holdRoute,
		ValidateTopic: validateTopic,
		ValidateGroup: validateGroup,
		IsSystemTopic: isSystemTopic,
		SystemTopics: func() []string {
			var out []string
			for _, tc := range systemTopics(b.config()) {
				out = append(out, tc.TopicName)
			}
			return out
		},
		RelayTimeout: adminRelayTimeout,
		DelayOffsets: func() map[int32]int64 {
			out := make(map[int32]int64)
			for level := 1; level <= len(b.delayLevels); level++ {
				if off := b.schedule.Offset(level); off > 0 {
					out[int32(level)] = off
				}
			}
			return out
		},
	}
}
