package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Fixed positions of the stored record (see the package doc).
const (
	posTotalSize      = 0
	posMagic          = 4
	posBodyCRC        = 8
	posQueueID        = 12
	posFlag           = 16
	posQueueOffset    = 20
	posPhysicalOffset = 28
	posSysFlag        = 36
	posBornTimestamp  = 40
	posBornHost       = 48

	// MinRecordSize is the size of a V1 record with IPv4 hosts, an empty
	// body, topic and property string.
	MinRecordSize = 91
	// MaxTopicLen is the longest topic a V1 record holds.
	MaxTopicLen = 127
)

// RecordHeader is what ParseRecordHeader reads from a stored record. The
// offsets are relative to the start of the record.
type RecordHeader struct {
	TotalSize, MagicCode, BodyCRC, QueueID, Flag int32
	QueueOffset, PhysicalOffset                  int64
	SysFlag                                      int32
	BornTimestamp                                int64
	BornHost                                     Addr
	StoreTimestamp                               int64
	StoreHost                                    Addr
	ReconsumeTimes                               int32
	PreparedTransactionOffset                    int64
	BodyOffset, BodyLen                          int
	Topic                                        string
	PropertiesOffset, PropertiesLen              int
}

// BodyCRC is the record body checksum: CRC-32 (IEEE) masked with 0x7FFFFFFF.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// resolveProps picks the property string EncodeRecord stores.
func resolveProps(m *Inner, props string) string {
	if props != "" {
		return props
	}
	if m.PropertiesString != "" {
		return m.PropertiesString
	}
	if len(m.Properties) > 0 {
		return EncodeProperties(m.Properties)
	}
	return ""
}

func recordSize(bodyLen, topicLen, propsLen, bornWidth, storeWidth int) int {
	return MinRecordSize - 8 + bornWidth + storeWidth + bodyLen + topicLen + propsLen
}

// StoredSize is the size of the V1 record EncodeRecord(dst, m, "") writes.
func StoredSize(m *Inner) int {
	pl := len(m.PropertiesString)
	if pl == 0 {
		pl = EncodedPropertiesLen(m.Properties)
	}
	return RecordSize(m, pl)
}

// RecordSize is the size of the V1 record of m with a property string of
// propsLen bytes.
func RecordSize(m *Inner, propsLen int) int {
	return recordSize(len(m.Body), len(m.Topic), propsLen, max(hostWidth(m.BornHost.IP), 4), max(hostWidth(m.StoreHost.IP), 4))
}

// CheckInner reports why m (with property string props, resolved as
// EncodeRecord does) cannot be encoded as a V1 record, or nil.
func CheckInner(m *Inner, props string) error {
	props = resolveProps(m, props)
	return checkEncodable(m.Topic, len(m.Body), len(props), m.BornHost, m.StoreHost)
}

func checkEncodable(topic string, bodyLen, propsLen int, born, store Addr) error {
	if len(topic) > MaxTopicLen {
		return fmt.Errorf("%w: %d bytes", ErrTopicTooLong, len(topic))
	}
	if propsLen > MaxPropertiesLen {
		return fmt.Errorf("%w: %d bytes", ErrPropertiesTooLong, propsLen)
	}
	if hostWidth(born.IP) == 0 {
		return fmt.Errorf("%w: born host has %d bytes", ErrBadHost, len(born.IP))
	}
	if hostWidth(store.IP) == 0 {
		return fmt.Errorf("%w: store host has %d bytes", ErrBadHost, len(store.IP))
	}
	if bodyLen > math.MaxInt32-MinRecordSize-24-len(topic)-propsLen {
		return fmt.Errorf("%w: %d bytes", ErrBodyTooLong, bodyLen)
	}
	return nil
}

// AppendRecord is EncodeRecord with the checks of CheckInner.
func AppendRecord(dst []byte, m *Inner, props string) ([]byte, error) {
	props = resolveProps(m, props)
	if err := checkEncodable(m.Topic, len(m.Body), len(props), m.BornHost, m.StoreHost); err != nil {
		return dst, err
	}
	return encodeRecord(dst, m.Topic, m.QueueID, m.Flag, m.Body, props, m.SysFlag, m.BornTimestamp,
		m.BornHost, m.StoreHost, m.ReconsumeTimes, m.PreparedTransactionOffset), nil
}

// EncodeRecord appends the V1 record of m to dst. props is the property
// string to store; when empty, m.PropertiesString is used, and when that is
// empty too, EncodeProperties(m.Properties). The queue offset, physical
// offset and store timestamp are written as zero (see PatchRecord); the body
// CRC is computed and the host V6 bits of the sysFlag are set from the
// addresses. It allocates nothing beyond growing dst.
//
// The caller must have checked m with CheckInner (the broker refuses such
// messages at the door): EncodeRecord panics on a topic over 127 bytes,
// properties over 32767 bytes or a host that is neither IPv4 nor IPv6,
// because writing them would corrupt the log.
func EncodeRecord(dst []byte, m *Inner, props string) []byte {
	props = resolveProps(m, props)
	if err := checkEncodable(m.Topic, len(m.Body), len(props), m.BornHost, m.StoreHost); err != nil {
		panic(fmt.Errorf("message.EncodeRecord: %w", err))
	}
	return encodeRecord(dst, m.Topic, m.QueueID, m.Flag, m.Body, props, m.SysFlag, m.BornTimestamp,
		m.BornHost, m.StoreHost, m.ReconsumeTimes, m.PreparedTransactionOffset)
}

// encodeRecord writes a record whose fields have been checked.
func encodeRecord(dst []byte, topic string, queueID, flag int32, body []byte, props string, sysFlag int32,
	bornTS int64, born, store Addr, reconsumeTimes int32, preparedOffset int64) []byte {
	bw, sw := hostWidth(born.IP), hostWidth(store.IP)
	size := recordSize(len(body), len(topic), len(props), bw, sw)
	sysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if bw == 16 {
		sysFlag |= SysFlagBornHostV6
	}
	if sw == 16 {
		sysFlag |= SysFlagStoreHostV6
	}
	dst = slices.Grow(dst, size)
	dst = be32(dst, int32(size))
	dst = be32(dst, MagicCodeV1)
	dst = be32(dst, BodyCRC(body))
	dst = be32(dst, queueID)
	dst = be32(dst, flag)
	dst = be64(dst, 0) // queue offset
	dst = be64(dst, 0) // physical offset
	dst = be32(dst, sysFlag)
	dst = be64(dst, bornTS)
	dst = appendHost(dst, born)
	dst = be64(dst, 0) // store timestamp
	dst = appendHost(dst, store)
	dst = be32(dst, reconsumeTimes)
	dst = be64(dst, preparedOffset)
	dst = be32(dst, int32(len(body)))
	dst = append(dst, body...)
	dst = append(dst, byte(len(topic)))
	dst = append(dst, topic...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(props)))
	dst = append(dst, props...)
	return dst
}

// PatchRecord writes the three fields the store assigns: the queue offset
// (position 20), the physical offset (28) and the store timestamp (56, or 68
// when the born host is IPv6). rec must start with a record EncodeRecord
// wrote.
func PatchRecord(rec []byte, queueOffset, physicalOffset, storeTimestamp int64) {
	binary.BigEndian.PutUint64(rec[posQueueOffset:], uint64(queueOffset))
	binary.BigEndian.PutUint64(rec[posPhysicalOffset:], uint64(physicalOffset))
	ts := posBornHost + 8
	if int32(binary.BigEndian.Uint32(rec[posSysFlag:]))&SysFlagBornHostV6 != 0 {
		ts = posBornHost + 20
	}
	binary.BigEndian.PutUint64(rec[ts:], uint64(storeTimestamp))
}

// StoreTimestampPos is the position of the store timestamp in a record with
// the given sysFlag.
func StoreTimestampPos(sysFlag int32) int {
	if sysFlag&SysFlagBornHostV6 != 0 {
		return posBornHost + 20
	}
	return posBornHost + 8
}

// ParseRecordHeader reads the record at the start of b (b may continue past
// it). It checks the magic code and that every length agrees with TOTALSIZE,
// but not the body CRC. V2 records (2-byte topic length) are read too. The
// blank end-of-file marker gives ErrBlankRecord with TotalSize and MagicCode
// set. The returned addresses and topic are copies.
func ParseRecordHeader(b []byte) (RecordHeader, error) {
	var h RecordHeader
	if len(b) < 8 {
		return h, fmt.Errorf("%w: %d bytes, need 8 for size and magic", ErrRecordTooShort, len(b))
	}
	h.TotalSize = int32(binary.BigEndian.Uint32(b[posTotalSize:]))
	h.MagicCode = int32(binary.BigEndian.Uint32(b[posMagic:]))
	switch h.MagicCode {
	case MagicCodeV1, MagicCodeV2:
	case BlankMagicCode:
		return h, ErrBlankRecord
	default:
		return h, fmt.Errorf("%w: %#08x", ErrBadMagic, uint32(h.MagicCode))
	}
	total := int(h.TotalSize)
	if total < MinRecordSize {
		return h, fmt.Errorf("%w: total size %d below minimum %d", ErrBadLength, total, MinRecordSize)
	}
	if total > len(b) {
		return h, fmt.Errorf("%w: total size %d, have %d bytes", ErrRecordTooShort, total, len(b))
	}
	rec := b[:total]
	h.BodyCRC = int32(binary.BigEndian.Uint32(rec[posBodyCRC:]))
	h.QueueID = int32(binary.BigEndian.Uint32(rec[posQueueID:]))
	h.Flag = int32(binary.BigEndian.Uint32(rec[posFlag:]))
	h.QueueOffset = int64(binary.BigEndian.Uint64(rec[posQueueOffset:]))
	h.PhysicalOffset = int64(binary.BigEndian.Uint64(rec[posPhysicalOffset:]))
	h.SysFlag = int32(binary.BigEndian.Uint32(rec[posSysFlag:]))
	h.BornTimestamp = int64(binary.BigEndian.Uint64(rec[posBornTimestamp:]))
	bw, sw := 4, 4
	if h.SysFlag&SysFlagBornHostV6 != 0 {
		bw = 16
	}
	if h.SysFlag&SysFlagStoreHostV6 != 0 {
		sw = 16
	}
	// Fixed part up to and including the body length field.
	fixed := posBornHost + bw + 4 + 8 + sw + 4 + 4 + 8 + 4
	if total < fixed+1+2 {
		return h, fmt.Errorf("%w: total size %d below minimum %d for its host widths", ErrBadLength, total, fixed+3)
	}
	ips := make([]byte, bw+sw)
	p := posBornHost
	copy(ips, rec[p:p+bw])
	h.BornHost = Addr{IP: ips[:bw:bw], Port: int32(binary.BigEndian.Uint32(rec[p+bw:]))}
	p += bw + 4
	h.StoreTimestamp = int64(binary.BigEndian.Uint64(rec[p:]))
	p += 8
	copy(ips[bw:], rec[p:p+sw])
	h.StoreHost = Addr{IP: ips[bw:], Port: int32(binary.BigEndian.Uint32(rec[p+sw:]))}
	p += sw + 4
	h.ReconsumeTimes = int32(binary.BigEndian.Uint32(rec[p:]))
	p += 4
	h.PreparedTransactionOffset = int64(binary.BigEndian.Uint64(rec[p:]))
	p += 8
	bodyLen := int(int32(binary.BigEndian.Uint32(rec[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > total-p {
		return h, fmt.Errorf("%w: body length %d at %d in a %d-byte record", ErrBadLength, bodyLen, p-4, total)
	}
	h.BodyOffset, h.BodyLen = p, bodyLen
	p += bodyLen
	var topicLen int
	if h.MagicCode == MagicCodeV2 {
		if total-p < 2 {
			return h, fmt.Errorf("%w: no room for the topic length at %d", ErrBadLength, p)
		}
		topicLen = int(binary.BigEndian.Uint16(rec[p:]))
		p += 2
	} else {
		if total-p < 1 {
			return h, fmt.Errorf("%w: no room for the topic length at %d", ErrBadLength, p)
		}
		topicLen = int(int8(rec[p]))
		p++
	}
	if topicLen < 0 || topicLen > total-p {
		return h, fmt.Errorf("%w: topic length %d at %d in a %d-byte record", ErrBadLength, topicLen, p-1, total)
	}
	h.Topic = string(rec[p : p+topicLen])
	p += topicLen
	if total-p < 2 {
		return h, fmt.Errorf("%w: no room for the properties length at %d", ErrBadLength, p)
	}
	propsLen := int(int16(binary.BigEndian.Uint16(rec[p:])))
	p += 2
	if propsLen < 0 || propsLen != total-p {
		return h, fmt.Errorf("%w: properties length %d at %d, %d bytes left in the record", ErrBadLength, propsLen, p-2, total-p)
	}
	h.PropertiesOffset, h.PropertiesLen = p, propsLen
	return h, nil
}

// CheckRecord is ParseRecordHeader followed by the body CRC check.
func CheckRecord(b []byte) (RecordHeader, error) {
	h, err := ParseRecordHeader(b)
	if err != nil {
		return h, err
	}
	if got := BodyCRC(b[h.BodyOffset : h.BodyOffset+h.BodyLen]); got != h.BodyCRC {
		return h, fmt.Errorf("%w: stored %#08x, computed %#08x", ErrBadCRC, uint32(h.BodyCRC), uint32(got))
	}
	return h, nil
}

// PropertiesString returns the record's property string (a copy); rec is
// the record h was parsed from.
func (h *RecordHeader) PropertiesString(rec []byte) string {
	return string(rec[h.PropertiesOffset : h.PropertiesOffset+h.PropertiesLen])
}

// Property looks up one property of the record without decoding the
// others (Java parsing rule; the last occurrence wins). rec is the record h
// was parsed from.
func (h *RecordHeader) Property(rec []byte, name string) (string, bool) {
	return LookupProperty(h.PropertiesString(rec), name)
}

// Body returns the record's body (aliasing rec).
func (h *RecordHeader) Body(rec []byte) []byte {
	return rec[h.BodyOffset : h.BodyOffset+h.BodyLen : h.BodyOffset+h.BodyLen]
}

func be32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }
func be64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }
