// Package store is Spool's storage engine: the CommitLog of stored message
// records on fixed-size files, the consume queues built from it, the
// checkpoint, the abort and lock files, recovery, flushing and retention,
// behind the MessageStore interface the broker uses. Keys tagged
// live:"true" change at run time (UpdateConfig): hot paths read them through
// one copy-on-write pointer, and the loops sleeping on an interval are woken
// when it changes.
//
// What the package must never do: block on I/O under the put lock (no
// fsync, msync, file creation, truncation, mmap, rename or first touch of a
// cold page while it is held); report a put as OK before what the
// configuration promises is true (SYNC_FLUSH: an fsync covered it); retry a
// failed fsync on the same range; silently drop a record before the last
// flushed offset at recovery; touch mapped memory from request goroutines
// for data that may be cold (pread instead, unless mincore finds every page
// of the span in memory; the hot tail is copied with
// debug.SetPanicOnFault so a fault becomes an error).
//
// # Directory
//
//	storePathRootDir/
//	  commitlog/00000000000000000000   mappedFileSizeCommitLog bytes each,
//	  commitlog/00000000001073741824   named by the offset of their first byte
//	  consumequeue/TOPIC/QUEUEID/00000000000000000000
//	                                   mappedFileSizeConsumeQueue bytes each
//	                                   (300,000 entries), named by byte offset;
//	                                   sparse, descriptors in a bounded cache
//	  checkpoint                       4096 bytes, replaced atomically
//	  epochFileCheckpoint              controller mode: "count\ncrc\nepoch-startOffset\n..."
//	                                   (RocketMQ's text), replaced atomically
//	  abort                            present while running
//	  lock                             flock(2)ed by the running store
//
// # CommitLog file
//
//	+----------+----------+-----+----------+-------------+-------------------+
//	| record 0 | record 1 | ... | record n | blank (8 B) |  unused (zeros)   |
//	+----------+----------+-----+----------+-------------+-------------------+
//	                                       |<-- TOTALSIZE = bytes left ----->|
//
// A record never crosses a file end: when a record (run) plus the 8-byte
// blank marker does not fit, the marker (TOTALSIZE = bytes left in the
// file, MAGICCODE = 0xCBD43194) closes the file and the record goes to the
// next one. Files are fully allocated when created (a sparse file turns a
// full disk into SIGBUS).
//
// # Stored record (V1, IPv4 hosts; the pull body is these bytes unchanged)
//
//	 0  TOTALSIZE                 int32   whole record
//	 4  MAGICCODE                 int32   0xDAA320A7
//	 8  BODYCRC                   int32   crc32(body) & 0x7FFFFFFF
//	12  QUEUEID                   int32
//	16  FLAG                      int32
//	20  QUEUEOFFSET               int64   assigned under the put lock
//	28  PHYSICALOFFSET            int64   assigned under the put lock; recovery
//	                                      checks it equals the record's position
//	36  SYSFLAG                   int32
//	40  BORNTIMESTAMP             int64
//	48  BORNHOST                  4+4     (16+4 with sysFlag 0x10)
//	56  STORETIMESTAMP            int64   assigned under the put lock
//	64  STOREHOST                 4+4     (16+4 with sysFlag 0x20)
//	72  RECONSUMETIMES            int32
//	76  PREPAREDTRANSACTIONOFFSET int64
//	84  BODYLENGTH int32 | BODY
//	..  TOPICLENGTH int8 | TOPIC
//	..  PROPERTIESLENGTH int16 | PROPERTIES (name 0x01 value 0x02 ...)
//
// # Consume-queue entry (20 bytes; entry i = logical offset i at byte i*20)
//
//	+---------------------------+---------------+---------------------------+
//	| CommitLog offset (int64)  | size (int32)  | tag code (int64)          |
//	+---------------------------+---------------+---------------------------+
//
// The tag code is Java's String.hashCode of the TAGS property (0 without
// tags); in SCHEDULE_TOPIC_XXXX it is the delivery time.
//
// # Positions of a mapped file
//
//	0 ......... flushed ......... committed ......... wrote ......... size
//	  durable      |  readable (visible)   |  reserved, being copied |
//
// # Put path
//
// A put encodes its record outside the lock into a pooled buffer
// (message.EncodeRecord), then under the put lock: assigns the queue
// offset, the physical offset and the store time (message.PatchRecord),
// reserves the bytes and copies a record of up to 16 KiB into the mapping
// or write buffer (or, on the pwrite path while another put's write runs,
// into the staging ring); a larger record, and every pwrite, is copied
// after unlocking (readers never see past an unfinished copy: a small ordered
// list of pending ranges publishes the readable end). The lock's hold time
// is recorded (Stats.PutLockHold). ASYNC_FLUSH answers at once, unless an
// earlier range is still being copied: then the answer waits until the
// readable end passes the put, so no acknowledged record ever sits behind
// a hole that a kill -9 would leave and recovery would cut at; SYNC_FLUSH
// registers a completion that the flusher (one msync/fdatasync for every
// waiting put) or the timeout reaper (FLUSH_DISK_TIMEOUT after
// syncFlushTimeout, never OK) answers. The waiting puts are a plain
// structure (syncWaiters: add, covered, expired); the reaper keeps one
// timer for the earliest deadline, none per put. A failed sync turns the store
// read-only until restart and is never retried.
//
// # Write paths
//
//	writeWithoutMmap=false            memcpy into the shared mapping; msync
//	                                  on flush. Pages ahead of the cursor are
//	                                  pre-faulted (MADV_POPULATE_WRITE) by
//	                                  the allocator goroutine.
//	writeWithoutMmap=true             pwrite after the lock is released. A
//	(Spool's default)                 put that finds no write of another
//	                                  put running writes its own bytes; one
//	                                  that finds one running copies a run of
//	                                  up to 16 KiB under the lock into a
//	                                  256 KiB staging ring, and the running
//	                                  writer writes every contiguous staged
//	                                  run with one pwrite (a group) while
//	                                  their answers are held for the
//	                                  readable end as behind an unfinished
//	                                  range. Larger runs, and puts that find
//	                                  the ring full, pwrite their own bytes.
//	                                  A batch is one run, so one write.
//	                                  fdatasync on flush (under SYNC_FLUSH
//	                                  the flusher is woken after each group,
//	                                  so one sync covers it, or an event
//	                                  loop's pass syncs what it wrote
//	                                  itself: flusher.go). Loss window:
//	                                  what the page cache holds unsynced
//	                                  (power loss only; a process kill loses
//	                                  nothing acknowledged: a put is answered
//	                                  once its bytes, and every one before
//	                                  them, are in the file).
//	transientStorePoolEnable=true     memcpy into a pooled write buffer
//	(ASYNC_FLUSH only)                (transientStorePoolSize buffers of one
//	                                  file, mlocked when the limit allows);
//	                                  the committer pwrites runs of at least
//	                                  commitCommitLogLeastPages pages every
//	                                  commitIntervalCommitLog ms; readers see
//	                                  only committed bytes. Loss window: a
//	                                  process kill loses acknowledged puts
//	                                  not yet committed (up to one commit
//	                                  interval), as in RocketMQ.
//
// # Dispatch
//
// The dispatcher ("reput") reads the CommitLog from its cursor to the
// readable end, appends consume-queue entries and runs the OnDispatch
// callbacks (long polls). Entries collect in their queue's tail in memory
// (readers are served from it) and are written with one pwrite per queue
// when the tail reaches 16 KiB, when all tails pass 4 MiB, and before each
// consume-queue flush (every flushIntervalConsumeQueue, at shutdown and at
// a truncation), so a queue of a topic with many queues costs about one
// write per flush interval rather than one per entry. The checkpoint's
// dispatched offset never passes an entry that is not in its file (a
// crash loses the tails; recovery dispatches them again from the
// CommitLog); the files themselves are still created by the dispatcher,
// without a file or directory sync: the flush that syncs a file's first
// entries fsyncs the file and its directory first, and a queue's earlier
// file is synced before its next one is made, so only a queue's last file
// can be cut short by a crash (loading removes it) and a slow disk does
// not stall dispatch for each new queue. A put wakes it only when it is parked: the
// dispatcher raises an idle flag, re-checks the readable end and only then
// blocks, and a put reads the flag after publishing its records, so a busy
// dispatcher costs puts one atomic load and no wake-up is lost. The index
// dispatcher reads from its own cursor; the reput dispatcher wakes it the
// same way, and a woken index dispatcher gathers for 10 ms (not when 1 MiB
// is waiting) before it reads, so index building costs at most about one
// wake-up per 10 ms under a stream of puts.
//
// While a dispatch pass fails, puts are refused (SERVICE_NOT_AVAILABLE
// with a remark naming the error) and the pass is retried every 100 ms.
// Consume-queue files are sparse (ftruncate, no fallocate) and keep their
// descriptors in an LRU cache of a quarter of RLIMIT_NOFILE (16..8192); a
// handle reopens its file on demand, so descriptor use does not grow with
// the number of queues. A queue ends at its first zero entry: loading
// reads from the first page up to it.
//
// # Pull reads
//
// A pull decodes its consume-queue entries, applies the transfer limits and
// the tag filter, then groups the chosen records into read spans: records
// in CommitLog order join one span while the bytes between them (other
// queues' records) are at most 16 KiB, the span stays within 1 MiB and
// within one CommitLog file. A span inside the memory window whose pages
// mincore(2) finds all in memory is copied record by record from the file's
// read mapping (the bytes between records are not copied; the copy runs
// with debug.SetPanicOnFault); any other span is read with one pread,
// its records sliced out. Both land in one pooled buffer that the result
// holds until Release. A pread that fails falls back to one read per
// record. Every record is then checked (size, magic, its physical offset,
// body CRC, its queue offset) before it is returned.
//
//	CommitLog  |a0|b0|c0|a1|b1|c1|a2|...     a pull of queue a: pages in memory,
//	            <------ one span ------->    copies a0, a1, a2; else one pread
//	                                         of [a0, a2] and slices a0, a1, a2
//
// GetMessageNoWait, for a caller that must not wait (an event loop), reads
// the same way but only what is in memory: the consume-queue entries and
// any span read with pread use preadv2(RWF_NOWAIT), a mapped span is
// copied only when its pages are found in memory, and a pull that would
// wait returns nothing (the caller hands it to a goroutine that may).
//
// A file written with pwrite gets its read mapping at the first resident
// read; the mapping stays until the file is closed, so the pages it has
// touched count in the process's RssFile (not RssAnon). EvictPageCache
// drops them from it first.
//
// # Allocation ahead and the spill
//
// The allocator goroutine keeps preallocateFiles (2) CommitLog files
// created, allocated (fileAllocation), fsynced, named (directory synced)
// and mapped ahead of the writer, from start-up and again at each roll and
// when the current file is half full. A roll that finds no ready file does
// not create one: the writer continues into an in-memory spill (at most
// writeSpillSize bytes, one file) that readers are served from and that
// the allocator copies into the file once it exists (bulk outside the put
// lock, the last delta under it). A put that went into the spill is
// answered only once the spill is in its file (SpillHeld counts them):
// until then its bytes are in process memory, which a kill -9 loses, so
// under ASYNC_FLUSH too "a process crash loses nothing acknowledged" holds
// whatever the allocator's state. The put lock never waits for the file;
// only the answer does (SYNC_FLUSH puts wait for the flush anyway, which
// cannot pass a spill). A full spill answers OS_PAGE_CACHE_BUSY. When the
// creation failed (rather than lagged), a roll does not spill and puts in
// a started spill are refused: SERVICE_NOT_AVAILABLE with a [NO_SPACE]
// remark naming the error and the disk; the allocator retries with a
// back-off (100 ms doubling to 5 s, AllocRetries) and the held answers go
// out when the spill is adopted. At shutdown with the spill still in
// memory they are answered SERVICE_NOT_AVAILABLE. Counted: Spills,
// SpillWrites, SpillFull, SpillHeld, AllocFailures, NoSpaceRefusals,
// PutWaitedOnCreate (always 0 unless writeSpillSize=0 or a spill filled).
// A slave's replicated append rolls the same way: into the spill when no
// file is ready, except that bytes which do not fit the spill wait for
// its file (counted in PutWaitedOnCreate) where a put would be answered
// busy; what the slave acknowledges (ReplicaLog.AckOffset) stops at the
// spill until it is in its file, as a put in the spill is answered only
// then.
//
// # A full disk
//
// ENOSPC (or EDQUOT) is a condition, not a corruption. A write that finds
// no space refuses puts (SERVICE_NOT_AVAILABLE, [NO_SPACE] remark with the
// failed write and the disk's use) until it is retried successfully, with
// nothing acknowledged lost: CommitLog file creation and spill adoption
// (allocator back-off), a CommitLog pwrite (the range stays pending, so
// nothing after it becomes readable, and is written again by the
// allocator goroutine), consume-queue and index writes (their next pass or
// flush; unwritten entries stay in the tail),
// the checkpoint (the next flushIntervalConsumeQueue; the older checkpoint
// stays valid). At shutdown a checkpoint with no room for its temporary
// file overwrites the existing one in place (one page, CRC-checked; Start
// writes one so it exists), so the stop is clean. An fsync error is never
// one of these: it makes the store read-only until restart (design rule 8).
//
// Disk use is counted as stored bytes: statfs's used bytes minus the
// blocks reserved by CommitLog files allocated ahead and the unwritten
// rest of the current file (DiskStoredRatio, DiskReservedBytes). It is
// checked on every allocator pass (every roll and allocation attempt) as
// well as every cleanResourceInterval. When stored use passes
// diskMaxUsedSpaceRatio or free space is under twice the files ahead, one
// file is kept ahead instead of preallocateFiles. A forced deletion
// (diskSpaceCleanForciblyRatio) of a file that has not expired is logged
// as an error with its bytes and oldest message time and counted
// (ForcedDeletions, ForcedDeletedBytes, ForcedDeletedOldestMs).
//
// # Recovery
//
// Normal (no abort file): the last three CommitLog files are scanned to the
// first record that is not valid. Abnormal (abort present): consume queues
// keep only valid increasing entries below the checkpoint's dispatched
// offset; the CommitLog is scanned from the file holding that offset and
// every record is validated (magic, size, layout, body CRC, its own
// physical-offset field). An invalid record before the checkpoint's
// flushed offset refuses the start naming file and offset
// (skipCorruptedRecords=true skips to the next valid record, counts the
// loss, and overwrites the skipped bytes with a filler record — a
// rolled-back transaction record of the empty topic, which gets no queue
// entry — so the next start does not stop there again; the logical offset
// it held becomes a hole entry, CommitLog offset -1, that reads step
// over); after it, the tail is cut and zeroed, consume queues and index
// are truncated to match, and dispatch re-runs before any put. The body
// CRC covers only the body: a flipped bit in another header field, the
// topic or the properties passes these checks (as in RocketMQ).
package store
