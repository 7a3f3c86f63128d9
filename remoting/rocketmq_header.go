package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
)

// appendRocketMQHeader appends cmd's header in the ROCKETMQ binary layout.
// Ext fields are written in map order.
func appendRocketMQHeader(dst []byte, cmd *Command) ([]byte, error) {
	if cmd.Code < math.MinInt16 || cmd.Code > math.MaxInt16 {
		return dst, fmt.Errorf("%w: code %d", ErrCodeOutOfRange, cmd.Code)
	}
	if cmd.Version < math.MinInt16 || cmd.Version > math.MaxInt16 {
		return dst, fmt.Errorf("%w: version %d", ErrCodeOutOfRange, cmd.Version)
	}
	lang, _ := LanguageCode(cmd.Language)
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(cmd.Code)))
	dst = append(dst, lang)
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(cmd.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(cmd.Remark)))
	dst = append(dst, cmd.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for k, v := range cmd.ExtFields {
		if len(k) > math.MaxInt16 {
			return dst, fmt.Errorf("%w: key of %d bytes", ErrExtFieldTooLong, len(k))
		}
		dst = appendRocketMQField(dst, k, v)
	}
	if t := cmd.ext; t != nil && t.live {
		for i := range int(t.n) {
			e := &t.tab[i]
			if e.k1-e.k0 > math.MaxInt16 {
				return dst, fmt.Errorf("%w: key of %d bytes", ErrExtFieldTooLong, e.k1-e.k0)
			}
			dst = appendRocketMQField(dst, t.src[e.k0:e.k1], t.value(e))
		}
	}
	extLen := len(dst) - lenAt - 4
	if extLen > math.MaxInt32 {
		return dst, fmt.Errorf("%w: ext fields of %d bytes", ErrExtFieldTooLong, extLen)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(extLen))
	return dst, nil
}

func appendRocketMQField(dst []byte, k, v string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// decodeRocketMQHeader decodes a ROCKETMQ binary header into cmd. Every
// length is checked against what remains before it is used; the ext map is
// sized by a first counting pass. The header is converted to one string and
// remark, keys and values are substrings of it.
func decodeRocketMQHeader(hdr []byte, cmd *Command) error {
	return decodeRocketMQHeaderMode(hdr, cmd, false)
}

// decodeRocketMQHeaderMode decodes a ROCKETMQ header; with inline set, up
// to ExtTableCap ext fields of a header of at most 64 KiB go into the
// command's inline table instead of the map.
func decodeRocketMQHeaderMode(hdr []byte, cmd *Command, inline bool) error {
	if len(hdr) < rocketMQFixedLen {
		return fmt.Errorf("%w: rocketmq header of %d bytes, fixed part is %d", ErrBadHeader, len(hdr), rocketMQFixedLen)
	}
	cmd.Code = int32(int16(binary.BigEndian.Uint16(hdr)))
	cmd.Language = LanguageName(hdr[2])
	cmd.Version = int32(int16(binary.BigEndian.Uint16(hdr[3:])))
	cmd.Opaque = int32(binary.BigEndian.Uint32(hdr[5:]))
	cmd.Flag = int32(binary.BigEndian.Uint32(hdr[9:]))
	remarkLen := uint64(binary.BigEndian.Uint32(hdr[13:]))
	pos := uint64(17)
	if remarkLen > uint64(len(hdr))-pos-4 {
		return fmt.Errorf("%w: remark length %d exceeds header of %d bytes", ErrBadHeader, remarkLen, len(hdr))
	}
	remarkEnd := pos + remarkLen
	extLen := uint64(binary.BigEndian.Uint32(hdr[remarkEnd:]))
	extStart := remarkEnd + 4
	if extLen != uint64(len(hdr))-extStart {
		return fmt.Errorf("%w: ext length %d, %d bytes left in header", ErrBadHeader, extLen, uint64(len(hdr))-extStart)
	}
	// First pass: validate and count.
	n := 0
	for p := extStart; p < uint64(len(hdr)); {
		if uint64(len(hdr))-p < 2 {
			return fmt.Errorf("%w: truncated ext key length", ErrBadHeader)
		}
		kl := uint64(binary.BigEndian.Uint16(hdr[p:]))
		p += 2
		if kl > MaxExtKeyLen {
			return fmt.Errorf("%w: key of %d bytes", ErrExtFieldTooLong, kl)
		}
		if uint64(len(hdr))-p < kl+4 {
			return fmt.Errorf("%w: truncated ext key", ErrBadHeader)
		}
		p += kl
		vl := uint64(binary.BigEndian.Uint32(hdr[p:]))
		p += 4
		if vl > MaxExtValueLen {
			return fmt.Errorf("%w: value of %d bytes", ErrExtFieldTooLong, vl)
		}
		if uint64(len(hdr))-p < vl {
			return fmt.Errorf("%w: truncated ext value", ErrBadHeader)
		}
		p += vl
		n++
		if n > MaxExtFields {
			return fmt.Errorf("%w: more than %d", ErrTooManyExtFields, MaxExtFields)
		}
	}
	s := headerString(hdr[17:], cmd)
	base := uint64(17)
	cmd.Remark = s[:remarkLen]
	if n == 0 {
		return nil
	}
	if inline && cmd.ext != nil && n <= ExtTableCap && len(s) <= maxTableHeader {
		t := cmd.ext
		*t = extTable{src: s, live: true}
		for p := extStart; p < uint64(len(hdr)); {
			kl := uint64(binary.BigEndian.Uint16(hdr[p:]))
			k0 := p + 2 - base
			p += 2 + kl
			vl := uint64(binary.BigEndian.Uint32(hdr[p:]))
			v0 := p + 4 - base
			p += 4 + vl
			t.add(int(k0), int(k0+kl), int(v0), int(v0+vl), false)
		}
		return nil
	}
	cmd.ExtFields = make(map[string]string, n)
	for p := extStart; p < uint64(len(hdr)); {
		kl := uint64(binary.BigEndian.Uint16(hdr[p:]))
		p += 2
		k := s[p-base : p-base+kl]
		p += kl
		vl := uint64(binary.BigEndian.Uint32(hdr[p:]))
		p += 4
		cmd.ExtFields[k] = s[p-base : p-base+vl]
		p += vl
	}
	return nil
}
