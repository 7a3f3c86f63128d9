// Package index owns the store's message-key index: RocketMQ's IndexFile
// layout under storePathRootDir/index, one file per period named by its
// creation time (yyyyMMddHHmmssSSS, local time), and the Service that the
// store's index dispatcher feeds from its own cursor and that QueryMessage
// reads.
//
// It must never be on the put path or the consume-queue dispatch path: the
// store feeds it from its own goroutine, and a slow or failing index only
// makes the index lag (IndexLagBytes) or stop (a sticky error), never blocks
// a put. It never reads the CommitLog itself.
//
// File layout (big-endian, identical to RocketMQ's IndexFile, so files are
// interchangeable):
//
//	offset 0                        40                  40+4*S                    40+4*S+20*N
//	+-------------------------------+-------------------+-------------------------+
//	| header (40 bytes)             | S hash slots      | N index entries         |
//	+-------------------------------+-------------------+-------------------------+
//
//	header:
//	+----------------+----------------+----------------+----------------+-------------+------------+
//	| beginTimestamp | endTimestamp   | beginPhyOffset | endPhyOffset   | hashSlotCnt | indexCount |
//	| int64 (ms)     | int64 (ms)     | int64          | int64          | int32       | int32      |
//	+----------------+----------------+----------------+----------------+-------------+------------+
//	 0                8                16               24               32            36        40
//
//	hash slot i (4 bytes): int32 number of the newest entry whose
//	keyHash % S == i, 0 = empty
//
//	entry n (20 bytes), n = 1 .. N-1 (entry 0 is never used, so 0 can mean
//	"none"; indexCount starts at 1 and counts entry 0):
//	+-----------+---------------+-----------+-----------+
//	| keyHash   | phyOffset     | timeDiff  | prevIndex |
//	| int32     | int64         | int32 (s) | int32     |
//	+-----------+---------------+-----------+-----------+
//	 0           4               12          16        20
//
//	keyHash   = |String.hashCode("topic#key")| as Java computes it over
//	            UTF-16 (Integer.MIN_VALUE maps to 0)
//	timeDiff  = (storeTimestamp - beginTimestamp) / 1000, clamped to
//	            [0, MaxInt32]; a query sees the entry at beginTimestamp +
//	            1000*timeDiff, so store times are rounded down to the second
//	prevIndex = the slot's previous head: entries of one slot form a chain
//	            from newest to oldest
//
// S is maxHashSlotNum (5,000,000) and N maxIndexNum (20,000,000), so a file
// is 40 + 20,000,000 + 400,000,000 bytes; a file is full at indexCount == N
// and a new one is created. Every message contributes "topic#UNIQ_KEY" and
// one "topic#key" per space-separated KEYS entry, all written to one file
// (a message that does not fit starts a new file).
//
// Durability: Put changes only memory (the newest file's hash slots are
// kept in memory, encoded as on disk); its entries, the slot pages they
// changed and the header are written back with a few large pwrites, in that
// order, when 1 MiB of entries is buffered, when a file fills, and at every
// Flush, so after a process kill the header describes whole messages as of
// the last write-back and the store's index dispatcher re-feeds the rest from
// IndexedPhyOffset. Flush then makes them durable with fdatasync (and syncs
// the directory after a new file). After a machine crash a file can hold any mix of
// synced and lost pages: Truncate, which the store calls after abnormal
// recovery, validates the newest file entry by entry, cuts it at the first
// bad entry or at the recovered CommitLog end, and rebuilds its hash slots.
// A file that cannot be parsed at all is removed at Open (it is derived
// data; the records it covered are no longer found by key) and counted.
//
// Use from the store:
//
//	svc, err := index.Open(index.Config{Dir: root + "/index", MaxHashSlotNum: ..., MaxIndexNum: ..., FS: fs})
//	// after an abnormal stop, once the CommitLog end is known:
//	svc.Truncate(recoveredMaxPhyOffset)
//	// index dispatcher goroutine, from svc.IndexedPhyOffset() (or earlier) on:
//	svc.Put(topic, index.SplitKeys(props["KEYS"]), props["UNIQ_KEY"], phyOffset, storeTimestamp)
//	svc.Dispatched(phyOffset + size)
//	// flush service: svc.Flush(); checkpoint gets svc.FlushedTimestamp()
//	// retention: svc.DeleteExpired(commitLogMinPhyOffset)
//	// QueryMessage: svc.Query(topic, key, min(maxNum, maxMsgsNumBatch), begin, end)
package index
