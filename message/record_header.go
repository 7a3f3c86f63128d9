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
	ts := StoreTimestampPos(int32(binary.BigEndian.Uint32(rec[posSysFlag:])))
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
// it) with ViewRecord's checks (magic code, every length against TOTALSIZE,
// not the body CRC) and copies its fields out. V2 records (2-byte topic
// length) are read too. The blank end-of-file marker gives ErrBlankRecord
// with TotalSize and MagicCode set. The returned addresses and topic are
// copies; readers that only look use ViewRecord, which allocates nothing.
func ParseRecordHeader(b []byte) (h RecordHeader, err error) {
	var v RecordView
	if err = v.Load(b); err != nil {
		if err == ErrBlankRecord {
			h.TotalSize, h.MagicCode = PeekRecord(b)
		}
		return h, err
	}
	// The fields are decoded at fixed offsets straight into the result (no
	// stores through a pointer, no copies of the view), which keeps this as
	// fast as a parser of its own: one allocation for both host addresses
	// and one for the topic.
	rec, bw, sw := v.b, v.bornW, v.storeW
	st := posBornHost + bw + 4 // store timestamp
	ra := st + 8 + sw + 4      // reconsume times
	ips := make([]byte, bw+sw)
	copy(ips, rec[posBornHost:posBornHost+bw])
	copy(ips[bw:], rec[st+8:st+8+sw])
	h.TotalSize = get32(rec, posTotalSize)
	h.MagicCode = get32(rec, posMagic)
	h.BodyCRC = get32(rec, posBodyCRC)
	h.QueueID = get32(rec, posQueueID)
	h.Flag = get32(rec, posFlag)
	h.QueueOffset = get64(rec, posQueueOffset)
	h.PhysicalOffset = get64(rec, posPhysicalOffset)
	h.SysFlag = get32(rec, posSysFlag)
	h.BornTimestamp = get64(rec, posBornTimestamp)
	h.BornHost = Addr{IP: ips[:bw:bw], Port: get32(rec, posBornHost+bw)}
	h.StoreTimestamp = get64(rec, st)
	h.StoreHost = Addr{IP: ips[bw:], Port: get32(rec, st+8+sw)}
	h.ReconsumeTimes = get32(rec, ra)
	h.PreparedTransactionOffset = get64(rec, ra+4)
	h.BodyOffset, h.BodyLen = v.bodyAt, v.bodyLen
	h.Topic = string(rec[v.topicAt : v.topicAt+v.topicLen])
	h.PropertiesOffset, h.PropertiesLen = v.propsAt, v.propsLen
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
