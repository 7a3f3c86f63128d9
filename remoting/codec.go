package remoting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Limits of the codec.
const (
	// MaxFrameSize is the default frame limit: 4 + L may not exceed it
	// (Java's com.rocketmq.remoting.frameMaxLength default).
	MaxFrameSize = 16 << 20
	// MaxHeaderSize is the largest header the 24-bit length can name.
	MaxHeaderSize = 1<<24 - 1
	// MaxExtFields caps the number of ext fields in one header.
	MaxExtFields = 1024
	// MaxExtKeyLen caps the length in bytes of one ext key.
	MaxExtKeyLen = 1024
	// MaxExtValueLen caps the length in bytes of one ext value.
	MaxExtValueLen = 4 << 20
	// rocketMQFixedLen is the fixed part of a ROCKETMQ header.
	rocketMQFixedLen = 21
	// prefixLen is the total-length word plus the header-length word.
	prefixLen = 8
)

// Errors of the codec. Every error returned by a decoder wraps one of them.
var (
	// ErrFrameTooLarge: the frame is longer than the frame limit, or an
	// encoded command would not fit the 32-bit length.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrFrameTooShort: the frame is shorter than its fixed part.
	ErrFrameTooShort = errors.New("remoting: frame too short")
	// ErrHeaderTooLarge: the header length exceeds the frame or 2^24-1.
	ErrHeaderTooLarge = errors.New("remoting: header length exceeds frame")
	// ErrBadSerializeType: the serialization type byte is neither 0 nor 1.
	ErrBadSerializeType = errors.New("remoting: unknown serialization type")
	// ErrBadHeader: the header does not decode.
	ErrBadHeader = errors.New("remoting: malformed header")
	// ErrTooManyExtFields: more than MaxExtFields ext fields.
	ErrTooManyExtFields = errors.New("remoting: too many ext fields")
	// ErrExtFieldTooLong: an ext key or value over its limit.
	ErrExtFieldTooLong = errors.New("remoting: ext field too long")
	// ErrCodeOutOfRange: a code or version does not fit the ROCKETMQ
	// header's short.
	ErrCodeOutOfRange = errors.New("remoting: value does not fit a ROCKETMQ header short")
)

// headerPool holds scratch buffers for headers that do not fit a reader's
// buffer and for Encode.
var headerPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Encode returns cmd as a whole frame, including the 4-byte total length,
// with its header in cmd.Serialize.
func Encode(cmd *Command) ([]byte, error) {
	cmd = withMap(cmd)
	size := prefixLen + 128 + len(cmd.Remark) + len(cmd.Body)
	for k, v := range cmd.ExtFields {
		size += len(k) + len(v) + 8
	}
	if t := cmd.ext; t != nil && t.live {
		size += len(t.src) + int(t.n)*8
	}
	return AppendFrame(make([]byte, 0, size), cmd)
}

// AppendFrame appends cmd as a whole frame (total length, header-length word,
// header, body) to dst.
func AppendFrame(dst []byte, cmd *Command) ([]byte, error) {
	out, err := AppendFrameHeader(dst, cmd)
	if err != nil {
		return dst, err
	}
	return append(out, cmd.Body...), nil
}

// AppendFrameHeader appends everything of cmd's frame except the body: the
// total length (which counts the body), the header-length word and the
// header. A writer sends the body after it, without copying it.
func AppendFrameHeader(dst []byte, cmd *Command) ([]byte, error) {
	cmd = withMap(cmd)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch cmd.Serialize {
	case SerializeJSON:
		dst = appendJSONHeader(dst, cmd)
	case SerializeRocketMQ:
		dst, err = appendRocketMQHeader(dst, cmd)
	default:
		err = fmt.Errorf("%w: %d", ErrBadSerializeType, cmd.Serialize)
	}
	if err != nil {
		return dst[:start], err
	}
	h := len(dst) - start - prefixLen
	if h > MaxHeaderSize {
		return dst[:start], fmt.Errorf("%w: header of %d bytes", ErrHeaderTooLarge, h)
	}
	total := 4 + h + len(cmd.Body)
	if total > 1<<31-1-4 {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(cmd.Serialize)<<24|uint32(h))
	return dst, nil
}

// EncodeHeader returns just the header of cmd in cmd.Serialize.
func EncodeHeader(cmd *Command) ([]byte, error) {
	cmd = withMap(cmd)
	switch cmd.Serialize {
	case SerializeJSON:
		return appendJSONHeader(nil, cmd), nil
	case SerializeRocketMQ:
		return appendRocketMQHeader(nil, cmd)
	}
	return nil, fmt.Errorf("%w: %d", ErrBadSerializeType, cmd.Serialize)
}

// DecodeHeader decodes a header of serialization t into a new command
// without a body.
func DecodeHeader(t SerializeType, header []byte) (*Command, error) {
	cmd := &Command{Serialize: t}
	var err error
	switch t {
	case SerializeJSON:
		err = decodeJSONHeader(header, cmd)
	case SerializeRocketMQ:
		err = decodeRocketMQHeader(header, cmd)
	default:
		err = fmt.Errorf("%w: %d", ErrBadSerializeType, t)
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}

// splitHeaderWord splits the header-length word.
func splitHeaderWord(w uint32) (SerializeType, int) {
	return SerializeType(w >> 24), int(w & 0xFFFFFF)
}

// DecodeFrame decodes one frame given WITHOUT its 4-byte total-length
// prefix. The command's Body aliases frame; the header fields do not.
func DecodeFrame(frame []byte) (*Command, error) {
	return decodeFrame(frame, false)
}

func decodeFrame(frame []byte, inline bool) (*Command, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooShort, len(frame))
	}
	t, h := splitHeaderWord(binary.BigEndian.Uint32(frame))
	if h > len(frame)-4 {
		return nil, fmt.Errorf("%w: header %d, frame %d", ErrHeaderTooLarge, h, len(frame))
	}
	cmd := newCommand(t, inline)
	if err := decodeHeaderInto(t, frame[4:4+h], cmd, inline); err != nil {
		return nil, err
	}
	if body := frame[4+h:]; len(body) > 0 {
		cmd.Body = body
	}
	return cmd, nil
}

// ReadCommand reads one frame from r. maxFrame bounds 4 + L (0 means
// MaxFrameSize). Limits are checked before anything sized by the frame is
// allocated; the body is allocated exactly. It returns io.EOF only when r
// ends cleanly between frames, io.ErrUnexpectedEOF inside a frame.
func ReadCommand(r *bufio.Reader, maxFrame int) (*Command, error) {
	return readCommand(r, maxFrame, false, false)
}

// ReadCommandCompact is ReadCommandInline with a header of up to 320
// bytes copied into the command's own allocation instead of a string of
// its own: one allocation fewer per frame, but any field kept (a key, a
// value, the remark) keeps the whole command and its body alive. It is for
// readers that let go of a command when they are done with it, such as a
// load generator reading its answers.
func ReadCommandCompact(r *bufio.Reader, maxFrame int) (*Command, error) {
	return readCommand(r, maxFrame, true, true)
}

// ReadCommandInline reads one frame as ReadCommand does and accepts and
// refuses the same bytes, but leaves up to ExtTableCap ext fields in the
// command's inline table: spans of the header text, which the command
// keeps as the one string ReadCommand makes anyway. No map is built:
// LookupExt and Ext read the table, ExtMap builds ExtFields from it. A
// header with more fields, longer than 64 KiB, or with a JSON ext key
// written with escapes gets the map at once, as does a JSON header with
// more than one extFields key.
func ReadCommandInline(r *bufio.Reader, maxFrame int) (*Command, error) {
	return readCommand(r, maxFrame, true, false)
}

// DecodeFrameInline is DecodeFrame with the ext fields left in the
// command's inline table, as ReadCommandInline leaves them.
func DecodeFrameInline(frame []byte) (*Command, error) {
	return decodeFrame(frame, true)
}

func readCommand(r *bufio.Reader, maxFrame int, inline, compact bool) (*Command, error) {
	if maxFrame <= 0 {
		maxFrame = MaxFrameSize
	}
	pre, err := r.Peek(4)
	if err != nil {
		if err == io.EOF && len(pre) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if _, err := FrameSize(pre, maxFrame); err != nil {
		return nil, err
	}
	total := binary.BigEndian.Uint32(pre)
	if pre, err = r.Peek(prefixLen); err != nil {
		return nil, eofInFrame(err)
	}
	if _, err := FrameSize(pre, maxFrame); err != nil {
		return nil, err
	}
	t, h := splitHeaderWord(binary.BigEndian.Uint32(pre[4:]))
	if _, err := r.Discard(prefixLen); err != nil {
		return nil, err
	}
	var cmd *Command
	if compact {
		cmd = newInlineCommand(t, h)
	} else {
		cmd = newCommand(t, inline)
	}
	if h <= r.Size() {
		hdr, err := r.Peek(h)
		if err != nil {
			return nil, eofInFrame(err)
		}
		err = decodeHeaderInto(t, hdr, cmd, inline)
		r.Discard(h)
		if err != nil {
			return nil, err
		}
	} else {
		bp := headerPool.Get().(*[]byte)
		hdr := *bp
		if cap(hdr) < h {
			hdr = make([]byte, h)
		}
		hdr = hdr[:h]
		_, err := io.ReadFull(r, hdr)
		if err == nil {
			err = decodeHeaderInto(t, hdr, cmd, inline)
		} else {
			err = eofInFrame(err)
		}
		if cap(hdr) <= 64<<10 {
			*bp = hdr[:0]
			headerPool.Put(bp)
		}
		if err != nil {
			return nil, err
		}
	}
	if b := int(total) - 4 - h; b > 0 {
		body, err := readBody(r, b)
		if err != nil {
			return nil, err
		}
		cmd.Body = body
	}
	return cmd, nil
}

// FrameSize checks the start of a frame in b as ReadCommand does, before
// anything sized by the frame is allocated, and returns the whole frame's
// size (4 + L). With fewer than 4 bytes it returns 0 and no error; with 4
// to 7 it checks the length alone and returns 0 unless the length is
// wrong, so a reader holding only part of a frame learns early that it is
// refused.
func FrameSize(b []byte, maxFrame int) (int, error) {
	if maxFrame <= 0 {
		maxFrame = MaxFrameSize
	}
	if len(b) < 4 {
		return 0, nil
	}
	total := binary.BigEndian.Uint32(b)
	if uint64(total)+4 > uint64(maxFrame) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, uint64(total)+4, maxFrame)
	}
	if total < 4 {
		return 0, fmt.Errorf("%w: length %d", ErrFrameTooShort, total)
	}
	if len(b) < prefixLen {
		return 0, nil
	}
	t, h := splitHeaderWord(binary.BigEndian.Uint32(b[4:]))
	if h > int(total)-4 {
		return 0, fmt.Errorf("%w: header %d, frame %d", ErrHeaderTooLarge, h, total)
	}
	if t != SerializeJSON && t != SerializeRocketMQ {
		return 0, fmt.Errorf("%w: %d", ErrBadSerializeType, t)
	}
	return int(total) + 4, nil
}

// bodyChunk is the largest body allocated before any of it has arrived.
const bodyChunk = 1 << 20

// readBody reads a body of n bytes. A large body grows (doubling) as its
// bytes arrive, so a peer that announces big frames and sends nothing costs
// at most bodyChunk per connection, not the frame limit.
func readBody(r *bufio.Reader, n int) ([]byte, error) {
	body := make([]byte, 0, min(n, bodyChunk))
	for len(body) < n {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(2*cap(body), n))
			copy(grown, body)
			body = grown
		}
		m, err := io.ReadFull(r, body[len(body):cap(body)])
		body = body[:len(body)+m]
		if err != nil {
			return nil, eofInFrame(err)
		}
	}
	return body, nil
}

func decodeHeaderInto(t SerializeType, hdr []byte, cmd *Command, inline bool) error {
	switch t {
	case SerializeJSON:
		return decodeJSONHeaderMode(hdr, cmd, inline)
	case SerializeRocketMQ:
		return decodeRocketMQHeaderMode(hdr, cmd, inline)
	}
	return fmt.Errorf("%w: %d", ErrBadSerializeType, t)
}

func eofInFrame(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
