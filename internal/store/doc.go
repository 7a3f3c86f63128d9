// Package store is Spool's storage engine: the CommitLog of stored message
// records on fixed-size files, the consume queues built from it, the
// checkpoint, the abort and lock files, recovery, flushing and retention,
// behind the MessageStore interface the broker uses.
//
// What the package must never do: block on I/O under the put lock (no
// fsync, msync, file creation, truncation, mmap, rename or first touch of a
// cold page while it is held); report a put as OK before what the
// configuration promises is true (SYNC_FLUSH: an fsync covered it); retry a
// failed fsync on the same range; silently drop a record before the last
// flushed offset at recovery; touch mapped memory from request goroutines
// for data that may be cold (pread instead; the hot tail is copied with
// debug.SetPanicOnFault so a fault becomes an error).
//
// # Directory
//
//	storePathRootDir/
//	  commitlog/00000000000000000000   mappedFileSizeCommitLog bytes each,
//	  commitlog/00000000001073741824   named by the offset of their first byte
//	  consumequeue/TOPIC/QUEUEID/00000000000000000000
//	                                   mappedFileSizeConsumeQueue bytes each
//	                                   (300,000 entries), named by byte offset
//	  checkpoint                       4096 bytes, replaced atomically
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
// reserves the bytes and copies a small record into the mapping (a large
// record or a pwrite is done after unlocking; readers never see past an
// unfinished copy). A roll takes a file the allocator made ready ahead; if
// none is ready the writer creates one (counted: PutWaitedOnCreate).
// ASYNC_FLUSH answers at once; SYNC_FLUSH registers a completion that the
// flusher (one fsync for many puts) or the timeout reaper answers.
package store
