package message

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"
)

// batchMemberFixed is the size of a batch member without body and
// properties: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN, PROPSLEN.
const batchMemberFixed = 4 + 4 + 4 + 4 + 4 + 2

// DecodeBatchBody splits a SEND_BATCH_MESSAGE body into its members
// (§8.5 of the protocol reference). Member MAGICCODE and BODYCRC are
// ignored, as Java does. Bodies alias body; TagsCode is the Java hash of
// each member's TAGS. maxMembers > 0 bounds the number of members. An empty
// body, a member whose TOTALSIZE disagrees with its lengths, or trailing
// bytes give ErrBadBatch.
func DecodeBatchBody(body []byte, maxMembers int) ([]BatchMember, error) {
	return decodeBatchBody(body, maxMembers, false)
}

// DecodeBatchBodyView is DecodeBatchBody with each member's
// PropertiesString aliasing body as well (no copy): body must not be
// written while the members are in use (a request's body while its
// handler runs qualifies).
func DecodeBatchBodyView(body []byte, maxMembers int) ([]BatchMember, error) {
	return decodeBatchBody(body, maxMembers, true)
}

// countBatchMembers walks the members' total sizes, for the slice's
// capacity; 0 when the walk does not end at the end of body (the decoding
// pass then reports why).
func countBatchMembers(body []byte, maxMembers int) int {
	n := 0
	for p := 0; p < len(body); n++ {
		if len(body)-p < 4 || (maxMembers > 0 && n >= maxMembers) {
			return 0
		}
		total := int(int32(binary.BigEndian.Uint32(body[p:])))
		if total < batchMemberFixed || total > len(body)-p {
			return 0
		}
		p += total
	}
	return n
}

func decodeBatchBody(body []byte, maxMembers int, view bool) ([]BatchMember, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty body", ErrBadBatch)
	}
	var members []BatchMember
	if n := countBatchMembers(body, maxMembers); n > 0 {
		members = make([]BatchMember, 0, n)
	}
	for p := 0; p < len(body); {
		if maxMembers > 0 && len(members) >= maxMembers {
			return nil, fmt.Errorf("%w: more than %d members", ErrBadBatch, maxMembers)
		}
		rest := body[p:]
		if len(rest) < batchMemberFixed {
			return nil, fmt.Errorf("%w: member %d at %d: %d bytes left, need %d", ErrBadBatch, len(members), p, len(rest), batchMemberFixed)
		}
		total := int(int32(binary.BigEndian.Uint32(rest)))
		if total < batchMemberFixed || total > len(rest) {
			return nil, fmt.Errorf("%w: member %d at %d: total size %d, %d bytes left", ErrBadBatch, len(members), p, total, len(rest))
		}
		m := rest[:total]
		flag := int32(binary.BigEndian.Uint32(m[12:]))
		bodyLen := int(int32(binary.BigEndian.Uint32(m[16:])))
		if bodyLen < 0 || bodyLen > total-batchMemberFixed {
			return nil, fmt.Errorf("%w: member %d at %d: body length %d in a %d-byte member", ErrBadBatch, len(members), p, bodyLen, total)
		}
		q := 20 + bodyLen
		propsLen := int(int16(binary.BigEndian.Uint16(m[q:])))
		if propsLen < 0 || q+2+propsLen != total {
			return nil, fmt.Errorf("%w: member %d at %d: properties length %d, total size %d, body length %d", ErrBadBatch, len(members), p, propsLen, total, bodyLen)
		}
		var props string
		if view && propsLen > 0 {
			props = unsafe.String(&m[q+2], propsLen)
		} else {
			props = string(m[q+2:])
		}
		tags, _ := LookupProperty(props, PropertyTags)
		members = append(members, BatchMember{
			Flag:             flag,
			Body:             m[20:q:q],
			PropertiesString: props,
			TagsCode:         TagsHashCode(tags),
		})
		p += total
	}
	return members, nil
}

// EncodeBatchBody appends the SEND_BATCH_MESSAGE encoding of members (what
// clients send; used by tests and tools).
func EncodeBatchBody(dst []byte, members []BatchMember) []byte {
	for _, m := range members {
		dst = be32(dst, int32(batchMemberFixed+len(m.Body)+len(m.PropertiesString)))
		dst = be32(dst, 0)
		dst = be32(dst, 0)
		dst = be32(dst, m.Flag)
		dst = be32(dst, int32(len(m.Body)))
		dst = append(dst, m.Body...)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.PropertiesString)))
		dst = append(dst, m.PropertiesString...)
	}
	return dst
}

// CheckBatch reports why b cannot be encoded as V1 records, or nil.
func CheckBatch(b *Batch) error {
	for i := range b.Members {
		m := &b.Members[i]
		if err := checkEncodable(b.Topic, len(m.Body), len(m.PropertiesString), b.BornHost, b.StoreHost); err != nil {
			return fmt.Errorf("batch member %d: %w", i, err)
		}
	}
	return nil
}

// BatchStoredSize is the total size of the records of b.
func BatchStoredSize(b *Batch) int {
	bw, sw := max(hostWidth(b.BornHost.IP), 4), max(hostWidth(b.StoreHost.IP), 4)
	n := 0
	for i := range b.Members {
		n += recordSize(len(b.Members[i].Body), len(b.Topic), len(b.Members[i].PropertiesString), bw, sw)
	}
	return n
}

// EncodeBatchRecords appends one V1 record per member of b (queue id,
// sysFlag, born time and hosts, reconsume times from b; prepared
// transaction offset 0; member properties unchanged) and returns each
// record's size. Like EncodeRecord it panics on input CheckBatch refuses.
func EncodeBatchRecords(dst []byte, b *Batch) ([]byte, []int) {
	if err := CheckBatch(b); err != nil {
		panic(fmt.Errorf("message.EncodeBatchRecords: %w", err))
	}
	sizes := make([]int, len(b.Members))
	dst = slices.Grow(dst, BatchStoredSize(b))
	for i := range b.Members {
		m := &b.Members[i]
		n := len(dst)
		dst = encodeRecord(dst, b.Topic, b.QueueID, m.Flag, m.Body, m.PropertiesString, b.SysFlag, b.BornTimestamp,
			b.BornHost, b.StoreHost, b.ReconsumeTimes, 0)
		sizes[i] = len(dst) - n
	}
	return dst, sizes
}
