// Package message owns the message model and its byte formats: the stored
// record (which is also the pull, check and view body), the property string,
// the SEND_BATCH_MESSAGE body, the sysFlag bits, the tag hash and the two
// kinds of message id. It is pure encoding: it must never do I/O, take locks
// on behalf of callers, or keep state other than the unique-id generator.
//
// # Stored record (RocketMQ V1 layout, big-endian)
//
// Spool always writes V1 (1-byte topic length), because the Go client reads
// every record as V1. Topics longer than 127 bytes are refused.
//
//	 offset    width  field
//	+--------+-------+-------------------------------------------------------+
//	|      0 |     4 | TOTALSIZE         whole record, this field included   |
//	|      4 |     4 | MAGICCODE         0xDAA320A7 (V1)                     |
//	|      8 |     4 | BODYCRC           crc32 IEEE of BODY & 0x7FFFFFFF     |
//	|     12 |     4 | QUEUEID                                               |
//	|     16 |     4 | FLAG              user flag                           |
//	|     20 |     8 | QUEUEOFFSET       logical offset      <- PatchRecord  |
//	|     28 |     8 | PHYSICALOFFSET    commit-log offset   <- PatchRecord  |
//	|     36 |     4 | SYSFLAG           0x10 born host V6, 0x20 store V6    |
//	|     40 |     8 | BORNTIMESTAMP     ms, client clock                    |
//	|     48 | 8, 20 | BORNHOST          IP (4 or 16) + port (int32)         |
//	| 56, 68 |     8 | STORETIMESTAMP    ms, broker clock    <- PatchRecord  |
//	|    ... | 8, 20 | STOREHOST         IP (4 or 16) + port (int32)         |
//	|    ... |     4 | RECONSUMETIMES                                        |
//	|    ... |     8 | PREPAREDTRANSACTIONOFFSET                             |
//	|    ... |   4+n | BODYLENGTH (int32) + BODY (compressed if sysFlag 0x1) |
//	|    ... |   1+t | TOPICLENGTH (byte, <= 127) + TOPIC (UTF-8)            |
//	|    ... |   2+p | PROPERTIESLENGTH (int16, <= 32767) + PROPERTIES       |
//	+--------+-------+-------------------------------------------------------+
//
//	size = 91 + n + t + p, plus 12 for each IPv6 host
//
// A commit-log file ends with a blank marker: TOTALSIZE then the blank magic
// 0xCBD43194; it never goes on the wire (ParseRecordHeader reports
// ErrBlankRecord).
//
// Only this package knows the field positions. Readers look at a record
// through RecordView (ViewRecord checks the lengths once; each accessor
// is a load at a fixed or derived offset, nothing is allocated), or copy
// its fields out with ParseRecordHeader, which is built on the view;
// scanners read TOTALSIZE and MAGICCODE with PeekRecord, writers of the
// blank marker use PutBlank. Every error about a record's bytes matches
// corrupt.ErrCorruption.
//
// # Properties
//
//	name 0x01 value 0x02 name 0x01 value 0x02 ...
//
// Parsing follows Java: split on 0x02; a segment is kept when its first 0x01
// has a non-empty name before it and a non-empty value after it (the value
// may contain 0x01).
//
// # Batch body (SEND_BATCH_MESSAGE)
//
//	+-----------+-----------+---------+------+----------+------+-----------+------------+
//	| TOTALSIZE | MAGICCODE | BODYCRC | FLAG | BODYLEN  | BODY | PROPSLEN  | PROPERTIES |
//	|    4      |  4 (0)    |  4 (0)  |  4   | 4 (int32)|  n   | 2 (int16) |     p      |
//	+-----------+-----------+---------+------+----------+------+-----------+------------+
//	TOTALSIZE = 22 + n + p; members back to back.
//
// # Message ids
//
//	offsetMsgId = HEX(storeIP (4|16) | storePort int32 | commitLogOffset int64)   32 or 56 chars
//	UNIQ_KEY    = HEX(IPv4 (4) | pid (2) | startup random (4) | ms since month start (4) | counter (2))
//
// All hex is upper case. UNIQ_KEY values from clients are opaque text.
package message
