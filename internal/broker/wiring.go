package broker

import (
	"log/slog"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/datapath"
	"github.com/spoolmq/spool/internal/longpoll"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
)

// scheduleQueueNums is the number of SCHEDULE_TOPIC_XXXX queues: one per
// delay level of the default level table.
const scheduleQueueNums = 18

// metadataDeps is what the broker gives the metadata managers.
func metadataDeps(cfg *Config, configDir string, logger *slog.Logger, clk clock.Clock) metadata.Deps {
	return metadata.Deps{
		ConfigDir:       configDir,
		Logger:          logger,
		BuiltinTopics:   systemTopics(cfg),
		AutoCreateTopic: topicAutoCreate,
		ValidateGroup:   systopic.ValidateGroup,
		Clock:           clk,
	}
}

// systemTopics are the topics RocketMQ's broker creates at start-up.
func systemTopics(cfg *Config) []*metadata.TopicConfig {
	var out []*metadata.TopicConfig
	add := func(tc *metadata.TopicConfig) { out = append(out, tc) }
	add(metadata.NewTopicConfig(topicSelfTest, 1, 1, metadata.PermRead|metadata.PermWrite))
	if cfg.AutoCreateTopicEnable {
		n := cfg.DefaultTopicQueueNums
		add(metadata.NewTopicConfig(topicAutoCreate, n, n, metadata.PermInherit|metadata.PermRead|metadata.PermWrite))
	}
	add(metadata.NewTopicConfig(topicBenchmark, 1024, 1024, metadata.PermRead|metadata.PermWrite))
	clusterPerm := metadata.PermInherit
	if cfg.ClusterTopicEnable {
		clusterPerm |= metadata.PermRead | metadata.PermWrite
	}
	add(metadata.NewTopicConfig(cfg.BrokerClusterName, 16, 16, clusterPerm))
	brokerPerm := metadata.PermInherit
	if cfg.BrokerTopicEnable {
		brokerPerm |= metadata.PermRead | metadata.PermWrite
	}
	add(metadata.NewTopicConfig(cfg.BrokerName, 1, 1, brokerPerm))
	add(metadata.NewTopicConfig(topicOffsetMovedEvent, 1, 1, metadata.PermRead|metadata.PermWrite))
	add(metadata.NewTopicConfig(topicSchedule, scheduleQueueNums, scheduleQueueNums, metadata.PermRead|metadata.PermWrite))
	if cfg.TraceTopicEnable {
		add(metadata.NewTopicConfig(cfg.MsgTraceTopicName, 1, 1, metadata.PermRead|metadata.PermWrite))
	}
	add(metadata.NewTopicConfig(cfg.BrokerClusterName+replyTopicSuffix, 1, 1, metadata.PermRead|metadata.PermWrite))
	add(metadata.NewTopicConfig(topicTransHalf, 1, 1, metadata.PermRead|metadata.PermWrite))
	add(metadata.NewTopicConfig(topicTransOpHalf, 1, 1, metadata.PermRead|metadata.PermWrite))
	return out
}

// scheduleDeps is what the broker gives the schedule service.
func scheduleDeps(b *Broker, path string) schedule.Deps {
	return schedule.Deps{
		Store:       b.Store,
		StoreConfig: b.storeConfig,
		DelayLevels: b.delayLevels,
		Topic:       topicSchedule,
		Path:        path,
		CountPut:    b.stats.countPut,
		RecoveryBudget: func() schedule.Budget {
			rb := newReadBudget(b.clock)
			return schedule.Budget{Wait: rb.wait, Charge: rb.charge}
		},
		Logger: b.logger,
	}
}

// transactionDeps is what the broker gives the transaction check service.
func transactionDeps(b *Broker, indexPath string) transaction.Deps {
	rb := newReadBudget(b.clock)
	return transaction.Deps{
		Store:   b.store,
		Offsets: b.offsets,
		Producer: func(group string) transaction.Conn {
			if c := b.producers.AnyConn(group); c != nil {
				return c
			}
			return nil // not a nil *transport.Conn in the interface
		},
		EnsureTopic: func(topic string) {
			if b.topics.Find(topic) == nil {
				b.topics.CreateInSendBack(topic, 1, metadata.PermRead|metadata.PermWrite, 0)
			}
		},
		WaitDispatch: func(quit <-chan struct{}) bool { return schedule.WaitStoreDispatch(b.store, quit) },
		PutCode:      datapath.PutStatusCode,
		StoreHost:    func() message.Addr { return b.storeHost },
		Config: func() transaction.Config {
			cfg := b.config()
			return transaction.Config{
				TimeoutMs:          cfg.TransactionTimeOut,
				CheckMax:           cfg.TransactionCheckMax,
				IntervalMs:         cfg.TransactionCheckInterval,
				ReadMsgsPerSecond:  cfg.TransactionCheckReadMsgsPerSecond,
				ReadBytesPerSecond: cfg.TransactionCheckReadBytesPerSecond,
				BrokerName:         cfg.BrokerName,
			}
		},
		Clock:         b.clock,
		Budget:        transaction.Budget{Wait: rb.wait, Charge: rb.charge},
		HalfTopic:     topicTransHalf,
		OpTopic:       topicTransOpHalf,
		CheckMaxTopic: topicTransCheckMax,
		IndexPath:     indexPath,
		Logger:        b.logger,
	}
}

// longPollDeps is what the broker gives long polling: the queue's end and
// the re-run of a held pull through its pull executor.
func longPollDeps(b *Broker) longpoll.Deps {
	return longpoll.Deps{
		MaxOffset: func(topic string, queueID int32) int64 { return b.store.MaxOffsetInQueue(topic, queueID) },
		Resume:    func(p *longpoll.Pull) { b.data.ResumeHeld(p) },
		OnHold:    func() { b.store.DispatchNow() },
	}
}

// processorDeps is what the broker gives the table and client handlers.
func processorDeps(b *Broker) processor.Deps {
	return processor.Deps{
		Store:     b.store,
		Topics:    b.topics,
		Groups:    b.groups,
		Offsets:   b.offsets,
		Consumers: b.consumers,
		Producers: b.producers,
		Locks:     b.locks,
		Config: func() processor.Config {
			cfg := b.config()
			return processor.Config{
				BrokerName:                     cfg.BrokerName,
				BrokerClusterName:              cfg.BrokerClusterName,
				AutoCreateSubscriptionGroup:    cfg.AutoCreateSubscriptionGroup,
				NotifyConsumerIdsChangedEnable: cfg.NotifyConsumerIdsChangedEnable,
				EnablePropertyFilter:           cfg.EnablePropertyFilter,
				DefaultQueryMaxNum:             b.storeConfig().DefaultQueryMaxNum,
			}
		},
		Clock:         b.clock,
		Logger:        b.logger,
		HoldRoute:     b.holdRoute,
		ValidateTopic: systopic.ValidateTopic,
		ValidateGroup: systopic.ValidateGroup,
		IsSystemTopic: isSystemTopic,
		RetryTopic:    retryTopic,
	}
}

// dataConfig is the data path's view of the configuration.
func dataConfig(cfg *Config, scfg *store.Config) *datapath.Config {
	return &datapath.Config{
		BrokerName:                      cfg.BrokerName,
		BrokerClusterName:               cfg.BrokerClusterName,
		BrokerPermission:                cfg.BrokerPermission,
		AutoCreateTopicEnable:           cfg.AutoCreateTopicEnable,
		AutoCreateSubscriptionGroup:     cfg.AutoCreateSubscriptionGroup,
		RejectTransactionMessage:        cfg.RejectTransactionMessage,
		RegionID:                        cfg.RegionID,
		TraceOn:                         cfg.TraceOn,
		StoreReplyMessageEnable:         cfg.StoreReplyMessageEnable,
		TransactionTimeOut:              cfg.TransactionTimeOut,
		EnablePropertyFilter:            cfg.EnablePropertyFilter,
		LongPollingEnable:               cfg.LongPollingEnable,
		ShortPollingTimeMills:           cfg.ShortPollingTimeMills,
		ColdReadBytesPerSecond:          cfg.ColdReadBytesPerSecond,
		BrokerFastFailureEnable:         cfg.BrokerFastFailureEnable,
		MaxMessageSize:                  scfg.MaxMessageSize,
		OSPageCacheBusyTimeOutMills:     scfg.OSPageCacheBusyTimeOutMills,
		TransientStorePoolSize:          scfg.TransientStorePoolSize,
		MaxTransferBytesOnMessageInDisk: scfg.MaxTransferBytesOnMessageInDisk,
		BrokerRole:                      scfg.BrokerRole,
		SlaveReadEnable:                 cfg.HA.SlaveReadEnable,
		BrokerID:                        cfg.BrokerID,
	}
}

// dataDeps is what the broker gives the data path.
func dataDeps(b *Broker) datapath.Deps {
	return datapath.Deps{
		Store:       b.store,
		Topics:      b.topics,
		Groups:      b.groups,
		Offsets:     b.offsets,
		Consumers:   b.consumers,
		Producers:   b.producers,
		Locks:       b.locks,
		Tx:          b.txCheck,
		LongPoll:    b.longPoll,
		Timers:      b.wheel,
		DelayLevels: b.delayLevels,
		Config:      b.dataCfg.Load,
		Clock:       b.clock,
		Logger:      b.logger,
		Addr:        func() string { return b.addr },
		StoreHost:   func() message.Addr { return b.storeHost },
		Stopping:    b.stopping,
		HoldRoute:   b.holdRoute,
		RouteWait:   b.routeWait,
		CountPut:    b.stats.countPut,
		CountGet:    b.stats.countGet,
		ColdTake:    b.cold.take,
		ColdCharge:  b.cold.charge,

		WaitReplicated: b.waitReplicated(),
		AdmitPut:       b.admitPut(),
		MasterUp:       b.masterUp,
		Stats:          b.traffic,
	}
}
