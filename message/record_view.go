package message

import (
	"encoding/binary"
	"fmt"
)

// RecordView reads the fields of one stored record in place: it is the
// only code that knows the field positions (see the package doc). A view
// is a value over the record's bytes; every accessor allocates nothing, and
// the slices it returns (hosts, body, topic, properties) alias the record.
// A view from ViewRecord has been checked (magic, every length against
// TOTALSIZE) so no accessor can run past its bytes; the body CRC is checked
// only by CheckCRC.
type RecordView struct {
	b                           []byte // exactly the record
	bornW, storeW               int    // 4 or 16
	bodyAt, topicAt, propsAt    int    // first byte of body, topic, properties
	bodyLen, topicLen, propsLen int
}

// RecordPrefixLen is how many bytes PeekRecord needs: TOTALSIZE and
// MAGICCODE, which is also the whole blank end-of-file marker.
const RecordPrefixLen = 8

// RecordHeadLen is how many leading bytes of a record StoreTimestampOf
// needs, whatever its host widths.
const RecordHeadLen = posBornHost + 20 + 8

// PeekRecord returns TOTALSIZE and MAGICCODE of the record (or blank
// marker) at the start of b, which must hold RecordPrefixLen bytes. Scanners
// use it to learn how many bytes to read before ViewRecord.
func PeekRecord(b []byte) (size, magic int32) {
	return int32(binary.BigEndian.Uint32(b[posTotalSize:])), int32(binary.BigEndian.Uint32(b[posMagic:]))
}

// PutBlank writes the blank end-of-file marker of a file whose last size
// bytes (size >= RecordPrefixLen) start at b.
func PutBlank(b []byte, size int) {
	binary.BigEndian.PutUint32(b[posTotalSize:], uint32(size))
	binary.BigEndian.PutUint32(b[posMagic:], uint32(int64(BlankMagicCode)&0xffffffff))
}

// StoreTimestampOf reads the store timestamp from the first bytes of a
// record (RecordHeadLen are always enough); ok is false when head is too
// short for the record's born-host width.
func StoreTimestampOf(head []byte) (ts int64, ok bool) {
	if len(head) < posSysFlag+4 {
		return 0, false
	}
	p := StoreTimestampPos(int32(binary.BigEndian.Uint32(head[posSysFlag:])))
	if p+8 > len(head) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(head[p:])), true
}

// ViewRecord checks the record at the start of b (b may continue past it)
// and returns a view of it. It checks the magic code (V1 or V2) and that
// every length agrees with TOTALSIZE, but not the body CRC (CheckCRC). The
// blank end-of-file marker gives ErrBlankRecord; bad bytes give an error
// wrapping ErrRecordTooShort, ErrBadMagic or ErrBadLength, all of which
// match corrupt.ErrCorruption. It allocates nothing unless it fails.
func ViewRecord(b []byte) (RecordView, error) {
	var v RecordView
	err := v.Load(b)
	return v, err
}

// Load is ViewRecord into v: readers on a hot path keep one view on their
// stack and load it, so that no view is copied. v.Bytes() is nil unless
// it succeeds.
func (v *RecordView) Load(b []byte) error {
	v.b = nil
	if len(b) < RecordPrefixLen {
		return recordErr(ErrRecordTooShort, "%d bytes, need 8 for size and magic", len(b))
	}
	size, magic := PeekRecord(b)
	switch magic {
	case MagicCodeV1, MagicCodeV2:
	case BlankMagicCode:
		return ErrBlankRecord
	default:
		return recordErr(ErrBadMagic, "%#08x", uint32(magic))
	}
	total := int(size)
	if total < MinRecordSize {
		return recordErr(ErrBadLength, "total size %d below minimum %d", total, MinRecordSize)
	}
	if total > len(b) {
		return recordErr(ErrRecordTooShort, "total size %d, have %d bytes", total, len(b))
	}
	rec := b[:total:total]
	sys := int32(binary.BigEndian.Uint32(rec[posSysFlag:]))
	v.bornW, v.storeW = 4, 4
	if sys&SysFlagBornHostV6 != 0 {
		v.bornW = 16
	}
	if sys&SysFlagStoreHostV6 != 0 {
		v.storeW = 16
	}
	// Fixed part up to and including the body length field.
	p := posBornHost + v.bornW + 4 + 8 + v.storeW + 4 + 4 + 8 + 4
	if total < p+1+2 {
		return recordErr(ErrBadLength, "total size %d below minimum %d for its host widths", total, p+3)
	}
	bodyLen := int(int32(binary.BigEndian.Uint32(rec[p-4:])))
	if bodyLen < 0 || bodyLen > total-p {
		return recordErr(ErrBadLength, "body length %d at %d in a %d-byte record", bodyLen, p-4, total)
	}
	v.bodyAt, v.bodyLen = p, bodyLen
	p += bodyLen
	var topicLen int
	if magic == MagicCodeV2 {
		if total-p < 2 {
			return recordErr(ErrBadLength, "no room for the topic length at %d", p)
		}
		topicLen = int(binary.BigEndian.Uint16(rec[p:]))
		p += 2
	} else {
		if total-p < 1 {
			return recordErr(ErrBadLength, "no room for the topic length at %d", p)
		}
		topicLen = int(int8(rec[p]))
		p++
	}
	if topicLen < 0 || topicLen > total-p {
		return recordErr(ErrBadLength, "topic length %d at %d in a %d-byte record", topicLen, p-1, total)
	}
	v.topicAt, v.topicLen = p, topicLen
	p += topicLen
	if total-p < 2 {
		return recordErr(ErrBadLength, "no room for the properties length at %d", p)
	}
	propsLen := int(int16(binary.BigEndian.Uint16(rec[p:])))
	p += 2
	if propsLen < 0 || propsLen != total-p {
		return recordErr(ErrBadLength, "properties length %d at %d, %d bytes left in the record", propsLen, p-2, total-p)
	}
	v.propsAt, v.propsLen = p, propsLen
	v.b = rec
	return nil
}

// recordErr is the error of a record that fails a check, wrapping kind.
// It is kept out of line so that the checks' frame stays small.
//
//go:noinline
func recordErr(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kind}, args...)...)
}

// CheckCRC checks the body CRC; a mismatch wraps ErrBadCRC. It is small
// enough to be inlined (the error is built out of line).
func (v *RecordView) CheckCRC() error {
	if got := BodyCRC(v.Body()); got != v.BodyCRC() {
		return crcErr(v.BodyCRC(), got)
	}
	return nil
}

//go:noinline
func crcErr(stored, computed int32) error {
	return fmt.Errorf("%w: stored %#08x, computed %#08x", ErrBadCRC, uint32(stored), uint32(computed))
}

func (v RecordView) i32(p int) int32 { return get32(v.b, p) }
func (v RecordView) i64(p int) int64 { return get64(v.b, p) }

// get32 and get64 read a big-endian field at p.
func get32(b []byte, p int) int32 { return int32(binary.BigEndian.Uint32(b[p:])) }
func get64(b []byte, p int) int64 { return int64(binary.BigEndian.Uint64(b[p:])) }

// storeTsAt is the position of STORETIMESTAMP.
func (v RecordView) storeTsAt() int { return posBornHost + v.bornW + 4 }

// reconsumeAt is the position of RECONSUMETIMES.
func (v RecordView) reconsumeAt() int { return v.storeTsAt() + 8 + v.storeW + 4 }

// Bytes returns the whole record (TOTALSIZE bytes).
func (v RecordView) Bytes() []byte { return v.b }

// TotalSize is TOTALSIZE.
func (v RecordView) TotalSize() int32 { return v.i32(posTotalSize) }

// Magic is MAGICCODE (MagicCodeV1 or MagicCodeV2).
func (v RecordView) Magic() int32 { return v.i32(posMagic) }

// BodyCRC is the stored BODYCRC.
func (v RecordView) BodyCRC() int32 { return v.i32(posBodyCRC) }

// QueueID is QUEUEID.
func (v RecordView) QueueID() int32 { return v.i32(posQueueID) }

// Flag is the user FLAG.
func (v RecordView) Flag() int32 { return v.i32(posFlag) }

// QueueOffset is QUEUEOFFSET.
func (v RecordView) QueueOffset() int64 { return v.i64(posQueueOffset) }

// PhysicalOffset is PHYSICALOFFSET.
func (v RecordView) PhysicalOffset() int64 { return v.i64(posPhysicalOffset) }

// SysFlag is SYSFLAG.
func (v RecordView) SysFlag() int32 { return v.i32(posSysFlag) }

// BornTimestamp is BORNTIMESTAMP.
func (v RecordView) BornTimestamp() int64 { return v.i64(posBornTimestamp) }

// BornHost is BORNHOST; its IP aliases the record.
func (v RecordView) BornHost() Addr {
	p, w := posBornHost, v.bornW
	return Addr{IP: v.b[p : p+w : p+w], Port: v.i32(p + w)}
}

// StoreTimestamp is STORETIMESTAMP.
func (v RecordView) StoreTimestamp() int64 { return v.i64(v.storeTsAt()) }

// StoreHost is STOREHOST; its IP aliases the record.
func (v RecordView) StoreHost() Addr {
	p, w := v.storeTsAt()+8, v.storeW
	return Addr{IP: v.b[p : p+w : p+w], Port: v.i32(p + w)}
}

// ReconsumeTimes is RECONSUMETIMES.
func (v RecordView) ReconsumeTimes() int32 { return v.i32(v.reconsumeAt()) }

// PreparedTransactionOffset is PREPAREDTRANSACTIONOFFSET.
func (v RecordView) PreparedTransactionOffset() int64 { return v.i64(v.reconsumeAt() + 4) }

// Body is BODY as stored (compressed when SysFlag has SysFlagCompressed).
func (v RecordView) Body() []byte { return v.b[v.bodyAt : v.bodyAt+v.bodyLen : v.bodyAt+v.bodyLen] }

// Topic is TOPIC. string(v.Topic()) in a comparison does not allocate.
func (v RecordView) Topic() []byte {
	return v.b[v.topicAt : v.topicAt+v.topicLen : v.topicAt+v.topicLen]
}

// Properties is the encoded PROPERTIES string.
func (v RecordView) Properties() []byte {
	return v.b[v.propsAt : v.propsAt+v.propsLen : v.propsAt+v.propsLen]
}

// Property looks up one property with LookupProperty's rule (Java's: the
// last occurrence with a non-empty value wins) without allocating; the
// value aliases the record.
func (v RecordView) Property(name string) ([]byte, bool) {
	return PropertyBytes(v.Properties(), name)
}
