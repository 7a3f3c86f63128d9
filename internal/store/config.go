package store

import (
	"os"
	"path/filepath"
)

// Flush disk types (flushDiskType).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Broker roles (brokerRole). A SYNC_MASTER's replication wait and a
// slave's HA client are the broker's (internal/ha); the store appends a
// slave's replicated bytes through ReplicaLog.
const (
	AsyncMaster = "ASYNC_MASTER"
	SyncMaster  = "SYNC_MASTER"
	Slave       = "SLAVE"
)

// File allocation methods (Spool's fileAllocation key).
const (
	// AllocZeros writes zeros over the whole file, then fdatasyncs it.
	AllocZeros = "zeros"
	// AllocFallocate reserves blocks with fallocate(2) mode 0 (unwritten
	// extents).
	AllocFallocate = "fallocate"
	// AllocZeroRange uses fallocate(2) with FALLOC_FL_ZERO_RANGE.
	AllocZeroRange = "zero-range"
)

// Config is the store configuration: RocketMQ's MessageStoreConfig keys
// (prop tag = the RocketMQ key) with RocketMQ 5.3.3 defaults, plus Spool's
// own keys. Keys tagged live:"true" may change while the store runs.
type Config struct {
	StorePathRootDir   string `prop:"storePathRootDir"`
	StorePathCommitLog string `prop:"storePathCommitLog"`

	MappedFileSizeCommitLog    int64 `prop:"mappedFileSizeCommitLog"`
	MappedFileSizeConsumeQueue int64 `prop:"mappedFileSizeConsumeQueue"`

	FlushDiskType                  string `prop:"flushDiskType"`
	FlushIntervalCommitLog         int    `prop:"flushIntervalCommitLog" live:"true"`
	FlushCommitLogTimed            bool   `prop:"flushCommitLogTimed" live:"true"`
	FlushCommitLogLeastPages       int    `prop:"flushCommitLogLeastPages" live:"true"`
	FlushCommitLogThoroughInterval int    `prop:"flushCommitLogThoroughInterval" live:"true"`
	SyncFlushTimeout               int64  `prop:"syncFlushTimeout" live:"true"`
	FlushIntervalConsumeQueue      int    `prop:"flushIntervalConsumeQueue" live:"true"`
	// A consume queue is synced at an interval once this many pages of it
	// are unsynced (0: at every interval), and every queue once per
	// FlushConsumeQueueThoroughInterval milliseconds.
	FlushConsumeQueueLeastPages       int `prop:"flushConsumeQueueLeastPages" live:"true"`
	FlushConsumeQueueThoroughInterval int `prop:"flushConsumeQueueThoroughInterval" live:"true"`

	// WriteWithoutMmap selects the pwrite write path. Spool's default is
	// true where RocketMQ's is false: measured on a 2-core machine, mapped
	// writes held the put lock 25 µs at p99 for 4 KiB records (page faults
	// and dirty-page throttling inside the lock) against 2-3 µs for pwrite,
	// which copies into the file after the lock is released. The transient
	// pool was faster still but loses acknowledged messages on a process
	// crash, so it stays opt-in.
	WriteWithoutMmap                bool `prop:"writeWithoutMmap"`
	TransientStorePoolEnable        bool `prop:"transientStorePoolEnable"`
	TransientStorePoolSize          int  `prop:"transientStorePoolSize"`
	CommitIntervalCommitLog         int  `prop:"commitIntervalCommitLog" live:"true"`
	CommitCommitLogLeastPages       int  `prop:"commitCommitLogLeastPages" live:"true"`
	CommitCommitLogThoroughInterval int  `prop:"commitCommitLogThoroughInterval" live:"true"`

	UseReentrantLockWhenPutMessage bool  `prop:"useReentrantLockWhenPutMessage"`
	OSPageCacheBusyTimeOutMills    int64 `prop:"osPageCacheBusyTimeOutMills" live:"true"`

	MaxMessageSize int `prop:"maxMessageSize" live:"true"`

	MaxTransferBytesOnMessageInMemory int `prop:"maxTransferBytesOnMessageInMemory" live:"true"`
	MaxTransferCountOnMessageInMemory int `prop:"maxTransferCountOnMessageInMemory" live:"true"`
	MaxTransferBytesOnMessageInDisk   int `prop:"maxTransferBytesOnMessageInDisk" live:"true"`
	MaxTransferCountOnMessageInDisk   int `prop:"maxTransferCountOnMessageInDisk" live:"true"`
	AccessMessageInMemoryMaxRatio     int `prop:"accessMessageInMemoryMaxRatio" live:"true"`

	FileReservedTime                 int    `prop:"fileReservedTime" live:"true"`
	DeleteWhen                       string `prop:"deleteWhen" live:"true"`
	DiskMaxUsedSpaceRatio            int    `prop:"diskMaxUsedSpaceRatio" live:"true"`
	DiskSpaceCleanForciblyRatio      int    `prop:"diskSpaceCleanForciblyRatio" live:"true"`
	DiskSpaceWarningLevelRatio       int    `prop:"diskSpaceWarningLevelRatio" live:"true"`
	CleanFileForciblyEnable          bool   `prop:"cleanFileForciblyEnable" live:"true"`
	CleanResourceInterval            int    `prop:"cleanResourceInterval"`
	DestroyMapedFileIntervalForcibly int64  `prop:"destroyMapedFileIntervalForcibly" live:"true"`
	DeleteFileBatchMax               int    `prop:"deleteFileBatchMax" live:"true"`

	MessageIndexEnable bool `prop:"messageIndexEnable"`
	MaxHashSlotNum     int  `prop:"maxHashSlotNum"`
	MaxIndexNum        int  `prop:"maxIndexNum"`
	DefaultQueryMaxNum int  `prop:"defaultQueryMaxNum" live:"true"`

	CheckCRCOnRecover bool   `prop:"checkCRCOnRecover"`
	MessageDelayLevel string `prop:"messageDelayLevel"`
	BrokerRole        string `prop:"brokerRole"`

	// Spool's own keys.

	// SkipCorruptedRecords lets abnormal recovery skip an invalid record
	// before the last flushed offset (logging and counting the loss)
	// instead of refusing to start.
	SkipCorruptedRecords bool `prop:"skipCorruptedRecords"`
	// PreallocateFiles is how many CommitLog files the allocator keeps
	// created, allocated and pre-faulted ahead of the writer (>= 1).
	PreallocateFiles int `prop:"preallocateFiles"`
	// FileAllocation is how new files get their blocks: zeros, fallocate
	// or zero-range.
	FileAllocation string `prop:"fileAllocation"`
	// SyncFlushOnEventLoop lets an event loop's pass end make its own
	// SYNC_FLUSH group commit (see flusher.go) while syncs are fast.
	SyncFlushOnEventLoop bool `prop:"syncFlushOnEventLoop"`
	// WriteSpillSize bounds the in-memory spill the writer uses when no
	// next CommitLog file is ready at a roll.
	WriteSpillSize int `prop:"writeSpillSize"`
}

// DefaultConfig returns RocketMQ 5.3.3's defaults.
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "."
	}
	root := filepath.Join(home, "store")
	return Config{
		StorePathRootDir:           root,
		StorePathCommitLog:         filepath.Join(root, "commitlog"),
		MappedFileSizeCommitLog:    1 << 30,
		MappedFileSizeConsumeQueue: 300000 * CQEntrySize,

		FlushDiskType:                     AsyncFlush,
		FlushIntervalCommitLog:            500,
		FlushCommitLogTimed:               true,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10 * 1000,
		SyncFlushTimeout:                  5 * 1000,
		FlushIntervalConsumeQueue:         1000,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60 * 1000,

		WriteWithoutMmap:                true,
		TransientStorePoolEnable:        false,
		TransientStorePoolSize:          5,
		CommitIntervalCommitLog:         200,
		CommitCommitLogLeastPages:       4,
		CommitCommitLogThoroughInterval: 200,

		UseReentrantLockWhenPutMessage: true,
		OSPageCacheBusyTimeOutMills:    1000,

		MaxMessageSize: 4 << 20,

		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 << 10,
		MaxTransferCountOnMessageInDisk:   8,
		AccessMessageInMemoryMaxRatio:     40,

		FileReservedTime:                 72,
		DeleteWhen:                       "04",
		DiskMaxUsedSpaceRatio:            75,
		DiskSpaceCleanForciblyRatio:      85,
		DiskSpaceWarningLevelRatio:       90,
		CleanFileForciblyEnable:          true,
		CleanResourceInterval:            10000,
		DestroyMapedFileIntervalForcibly: 120 * 1000,
		DeleteFileBatchMax:               10,

		MessageIndexEnable: true,
		MaxHashSlotNum:     5000000,
		MaxIndexNum:        5000000 * 4,
		DefaultQueryMaxNum: 32,

		CheckCRCOnRecover: true,
		MessageDelayLevel: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		BrokerRole:        AsyncMaster,

		SkipCorruptedRecords: false,
		PreallocateFiles:     2,
		FileAllocation:       AllocFallocate,
		WriteSpillSize:       64 << 20,
		SyncFlushOnEventLoop: true,
	}
}

// transient reports whether the transient store pool is in effect: as in
// RocketMQ, only with ASYNC_FLUSH on a master.
func (c *Config) transient() bool {
	return c.TransientStorePoolEnable && c.FlushDiskType == AsyncFlush && (c.BrokerRole == "" || c.BrokerRole == AsyncMaster)
}

// commitLogDir is where CommitLog files live.
func (c *Config) commitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

func (c *Config) consumeQueueDir() string { return filepath.Join(c.StorePathRootDir, "consumequeue") }
func (c *Config) indexDir() string        { return filepath.Join(c.StorePathRootDir, "index") }
func (c *Config) checkpointPath() string  { return filepath.Join(c.StorePathRootDir, "checkpoint") }
func (c *Config) abortPath() string       { return filepath.Join(c.StorePathRootDir, "abort") }
func (c *Config) lockPath() string        { return filepath.Join(c.StorePathRootDir, "lock") }
