package store

// SlowRead is RocketMQ's suggestPullingFromSlave rule (DefaultMessageStore
// getMessage): a pull whose last examined record starts more than
// accessMessageInMemoryMaxRatio percent of physical memory behind the
// CommitLog's end reads data no longer in memory. maxPhy is the
// CommitLog's max offset when the read began, lastPulled the physical
// offset of the last consume-queue entry the read examined (0 when it
// examined none, as RocketMQ counts it), memTotal the machine's physical
// memory and ratio accessMessageInMemoryMaxRatio.
func SlowRead(maxPhy, lastPulled, memTotal int64, ratio int) bool {
	return maxPhy-lastPulled > memoryWindowOf(memTotal, ratio)
}

// memoryWindowOf is the part of the CommitLog tail counted as in memory:
// ratio percent of memTotal (never negative).
func memoryWindowOf(memTotal int64, ratio int) int64 {
	if memTotal <= 0 || ratio <= 0 {
		return 0
	}
	return memTotal * int64(ratio) / 100
}
