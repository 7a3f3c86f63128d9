// Package remoting implements RocketMQ's remoting protocol: the frame, the
// JSON and ROCKETMQ (binary) header codecs, and the request and response
// codes. The transport (TCP server and client) lives in remoting/transport.
//
// This package owns the bytes of one command and nothing else. It must never
// do I/O beyond reading one frame from a caller's bufio.Reader, never keep
// state between calls (besides pooled scratch buffers), and never allocate
// memory sized by an untrusted length before that length has been checked
// against the limits below.
//
// # Frame
//
// Every integer is big-endian.
//
//	 0               4               8                 8+H            4+L
//	+---------------+---+-----------+-----------------+--------------+
//	| total len L   | T | H (24 bit)| header (H bytes)| body         |
//	| = 4 + H + B   |   |           | JSON or ROCKETMQ| (B bytes)    |
//	+---------------+---+-----------+-----------------+--------------+
//	                  T = serialization type: 0 JSON, 1 ROCKETMQ
//
// Limits, checked before anything is allocated: 4 + L <= the frame limit
// (MaxFrameSize, 16 MiB by default, as Java's frameMaxLength), L >= 4,
// H <= L - 4, at most MaxExtFields ext fields, keys of at most MaxExtKeyLen
// bytes and values of at most MaxExtValueLen bytes.
//
// # JSON header
//
// Compact, keys in this order (the order the Go client writes), ext fields
// in map order, every ext value a JSON string:
//
//	{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}
//
// The decoder accepts any key order, unknown keys (Java's
// serializeTypeCurrentRPC), null or absent remark and extFields, numbers
// given as JSON strings, ext values given as numbers or booleans, and every
// JSON escape (the properties ext field carries \u0001 and \u0002).
//
// ReadCommandInline (and DecodeFrameInline) accept and refuse exactly the
// bytes ReadCommand does, but leave up to ExtTableCap ext fields as spans
// of the header text in the command's inline table instead of a map, for
// handlers that read them with Command.LookupExt; Command.ExtMap builds
// the map on demand, and the encoders write either form.
// ReadCommandCompact also copies a header of up to 320 bytes into the
// command's own allocation, for readers that keep no field of a command
// once done with it (a field kept keeps the whole command alive).
//
// # ROCKETMQ header
//
//	+--------+------+---------+--------+--------+-----+--------+-----+--------------+
//	| code 2 |lang 1|version 2|opaque 4| flag 4 | R 4 | remark | E 4 | ext (E bytes)|
//	+--------+------+---------+--------+--------+-----+--------+-----+--------------+
//	ext entry: | key len 2 | key | value len 4 | value |
//
// The fixed part is 21 bytes. Code and version are signed shorts, so codes
// above 32767 travel only in JSON headers.
package remoting
