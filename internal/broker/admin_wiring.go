package broker

import (
	"time"

	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
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
		ValidateTopic: systopic.ValidateTopic,
		ValidateGroup: systopic.ValidateGroup,
		IsSystemTopic: isSystemTopic,
		SystemTopics: func() []string {
			// RocketMQ's TopicValidator set: its fixed names and the
			// system topics the broker created.
			seen := map[string]bool{}
			var out []string
			add := func(t string) {
				if !seen[t] {
					seen[t] = true
					out = append(out, t)
				}
			}
			for _, t := range []string{systopic.AutoCreate, systopic.Schedule, systopic.Benchmark, systopic.TransHalf,
				systopic.TraceDefault, systopic.TransOpHalf, systopic.TransCheckMax, systopic.SelfTest,
				systopic.OffsetMovedEvent, "CHECKPOINT_TOPIC"} {
				add(t)
			}
			for _, tc := range systemTopics(b.config()) {
				add(tc.TopicName)
			}
			if b.wheel() != nil {
				add(systopic.WheelTimer)
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
		Epochs:       b.epochTable,
		BrokerID:     b.registeredBrokerID,
		MaxPhyOffset: func() int64 { return b.store.MaxPhyOffset() },
	}
}

// epochTable is the store's epoch file in controller mode; nil outside
// it (GET_BROKER_EPOCH_CACHE is refused there) or before the store
// started.
func (b *Broker) epochTable() processor.EpochTable {
	if !b.config().EnableControllerMode {
		return nil
	}
	st, ok := b.store.(*store.DefaultMessageStore)
	if !ok || st.Epochs() == nil {
		return nil
	}
	return st.Epochs()
}
