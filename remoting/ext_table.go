package remoting

import (
	"math"
	"strconv"
	"unsafe"
)

// ExtTableCap is the number of ext fields a command read by
// ReadCommandInline keeps in its inline table; a header with more fields
// (or longer than 64 KiB, or with a JSON ext key written with escapes)
// gets the map at once.
const ExtTableCap = 16

// maxTableHeader is the longest header text whose offsets fit the table's
// 16-bit spans.
const maxTableHeader = math.MaxUint16

// extSpan locates one ext field in the header text: the key is
// src[k0:k1], the value src[v0:v1]. A value with JSON escapes (esc) is the
// JSON string whose opening quote is at v0-1 and is unescaped when read.
type extSpan struct {
	k0, k1, v0, v1 uint16
	esc            bool
}

// extTable is the inline form of a command's ext fields: spans into the
// header text, which the command keeps as one string. It is filled only by
// ReadCommandInline; every other decoder builds the map.
type extTable struct {
	src  string
	n    uint8
	live bool // the fields are in the table, ExtFields is not built
	tab  [ExtTableCap]extSpan
	// text, when set, is room in the command's allocation for its header
	// text (ReadCommandCompact).
	text *[compactText]byte
}

// compactText is the longest header ReadCommandCompact keeps in the
// command's own allocation.
const compactText = 320

// commandWithText is a command, its inline table and its header text in
// one allocation.
type commandWithText struct {
	cmd  Command
	tab  extTable
	text [compactText]byte
}

// headerString returns hdr as a string: in the command's own room when it
// has room for it, else a new string.
func headerString(hdr []byte, cmd *Command) string {
	if t := cmd.ext; t != nil && t.text != nil && len(hdr) > 0 && len(hdr) <= compactText {
		room := t.text
		t.text = nil // the room is used once
		n := copy(room[:], hdr)
		return unsafe.String(&room[0], n)
	}
	return string(hdr)
}

// commandWithTable is a command and its inline table in one allocation.
type commandWithTable struct {
	cmd Command
	tab extTable
}

// newCommand returns a command for a header of serialization t, with room
// for the inline table when inline is set.
func newCommand(t SerializeType, inline bool) *Command {
	if !inline {
		return &Command{Serialize: t}
	}
	return newInlineCommand(t, 0)
}

// newInlineCommand returns a command with room for the inline table and,
// when the header of h bytes fits compactText and compact is asked for
// (h > 0), for its text.
func newInlineCommand(t SerializeType, h int) *Command {
	if h > 0 && h <= compactText {
		ct := &commandWithText{}
		ct.cmd.Serialize = t
		ct.tab.text = &ct.text
		ct.cmd.ext = &ct.tab
		return &ct.cmd
	}
	ct := &commandWithTable{}
	ct.cmd.Serialize = t
	ct.cmd.ext = &ct.tab
	return &ct.cmd
}

// liveTable returns the command's table when its fields are in it.
func (c *Command) liveTable() *extTable {
	if t := c.ext; t != nil && t.live {
		return t
	}
	return nil
}

// LookupExt returns ext field k and whether the header carries it. It reads
// the inline table of a command from ReadCommandInline without building
// the map (a later duplicate of a key wins, as in the map), and the map
// otherwise.
func (c *Command) LookupExt(k string) (string, bool) {
	t := c.liveTable()
	if t == nil {
		v, ok := c.ExtFields[k]
		return v, ok
	}
	for i := int(t.n) - 1; i >= 0; i-- {
		e := &t.tab[i]
		if int(e.k1)-int(e.k0) == len(k) && t.src[e.k0:e.k1] == k {
			return t.value(e), true
		}
	}
	return "", false
}

// RangeExtInline calls fn with each ext field of the inline table, in the
// header's order (so a later duplicate of a key comes later), and returns
// true; it returns false, calling nothing, when the fields are in the map.
// A handler reading many fields does so in one pass over the table rather
// than with a LookupExt per field. A value is decoded only when fn asks
// for it.
func (c *Command) RangeExtInline(fn func(k string, v ExtValue)) bool {
	t := c.liveTable()
	if t == nil {
		return false
	}
	for i := range int(t.n) {
		e := &t.tab[i]
		fn(t.src[e.k0:e.k1], ExtValue{t: t, e: e})
	}
	return true
}

// ExtValue is the value of one field of a command's inline ext table,
// not decoded yet (a JSON value written with escapes is unescaped when
// asked for, which allocates). It is valid while the command's table is.
type ExtValue struct {
	t *extTable
	e *extSpan
}

// String is the value.
func (v ExtValue) String() string { return v.t.value(v.e) }

// WithRoomIn is the value and a buffer holding it with room more bytes of
// capacity, as Command.ExtWithRoomIn gives for a field.
func (v ExtValue) WithRoomIn(room int, scratch []byte) (string, []byte) {
	e := v.e
	buf := roomBuf(scratch, int(e.v1-e.v0)+room)
	if e.esc {
		d := jsonDecoder{s: v.t.src}
		buf, _ = d.appendStr(buf, int(e.v0), int(e.v0)) // validated when read
	} else {
		buf = append(buf, v.t.src[e.v0:e.v1]...)
	}
	return bufString(buf), buf
}

// roomBuf is scratch emptied when its capacity holds n bytes, a new
// buffer of that capacity otherwise.
func roomBuf(scratch []byte, n int) []byte {
	if n <= cap(scratch) {
		return scratch[:0]
	}
	return make([]byte, 0, n)
}

// bufString is buf's bytes as a string sharing them.
func bufString(buf []byte) string {
	if len(buf) == 0 {
		return ""
	}
	return unsafe.String(&buf[0], len(buf))
}

// ExtLen is the number of distinct ext fields when they are in the map,
// and the number of fields in the header (duplicates counted) when they are
// still in the inline table.
func (c *Command) ExtLen() int {
	if t := c.liveTable(); t != nil {
		return int(t.n)
	}
	return len(c.ExtFields)
}

// ExtMap builds ExtFields from the inline table when the fields are still
// there, and returns ExtFields. Code that reads or writes ExtFields directly
// calls it first on a command from ReadCommandInline; the transport does so
// for every handler that has not declared that it reads fields through
// LookupExt and Ext. It is not safe for concurrent use on one command.
func (c *Command) ExtMap() map[string]string {
	t := c.liveTable()
	if t == nil {
		return c.ExtFields
	}
	if t.n > 0 {
		if c.ExtFields == nil {
			c.ExtFields = make(map[string]string, t.n)
		}
		t.into(c.ExtFields)
	}
	*t = extTable{}
	return c.ExtFields
}

// into copies the table's fields into m, in order (a later duplicate wins).
func (t *extTable) into(m map[string]string) {
	for i := range int(t.n) {
		e := &t.tab[i]
		m[t.src[e.k0:e.k1]] = t.value(e)
	}
}

// value returns the value of e, unescaping a JSON string with escapes.
func (t *extTable) value(e *extSpan) string {
	if !e.esc {
		return t.src[e.v0:e.v1]
	}
	d := jsonDecoder{s: t.src, i: int(e.v0) - 1}
	v, _ := d.str() // validated when the header was read
	return v
}

// add appends a span; false when the table is full.
func (t *extTable) add(k0, k1, v0, v1 int, esc bool) bool {
	if int(t.n) == ExtTableCap {
		return false
	}
	t.tab[t.n] = extSpan{k0: uint16(k0), k1: uint16(k1), v0: uint16(v0), v1: uint16(v1), esc: esc}
	t.n++
	return true
}

// withMap returns cmd, or, when it has fields both in a map and in its
// table, a copy with them merged into one map (the table's win), for the
// encoders. cmd itself is not changed.
func withMap(cmd *Command) *Command {
	t := cmd.liveTable()
	if t == nil || cmd.ExtFields == nil {
		return cmd // the encoders write a table alone as it is
	}
	c := *cmd
	c.ext = nil
	c.ExtFields = make(map[string]string, len(cmd.ExtFields)+int(t.n))
	for k, v := range cmd.ExtFields {
		c.ExtFields[k] = v
	}
	t.into(c.ExtFields)
	return &c
}

// ExtWriter fills a command's ext fields without a map: keys and values
// are appended to one buffer that becomes the command's inline table when
// Close is called, so an answer with a handful of fields costs one
// allocation for all of them (numbers are formatted into the buffer).
// Fields past ExtTableCap, or past 64 KiB of text, go into the map. A
// command's readers see the fields through LookupExt and Ext, and ExtMap
// builds the map; the encoders write them either way.
//
// Use it on a command of one's own (a new response), before it is handed
// to anyone, and call Close once.
type ExtWriter struct {
	cmd   *Command
	wt    *writerTable
	buf   []byte
	spill bool // the fields went to the map
}

// writerBuf is the room for keys and values allocated with the table.
const writerBuf = 192

// writerTable is a table and the text of a small answer's fields in one
// allocation.
type writerTable struct {
	tab extTable
	buf [writerBuf]byte
}

// NewExtWriter returns a writer for cmd's fields whose buffer holds size
// bytes of keys and values before it grows (up to 192 bytes come with the
// table; a larger size costs a second allocation).
func NewExtWriter(cmd *Command, size int) ExtWriter {
	w := ExtWriter{cmd: cmd, wt: new(writerTable)}
	if size <= writerBuf {
		w.buf = w.wt.buf[:0]
	} else {
		w.buf = make([]byte, 0, size)
	}
	return w
}

// Str adds field k with value v.
func (w *ExtWriter) Str(k, v string) {
	if w.spill || !w.room(len(k)+len(v)) {
		w.cmd.SetExt(k, v)
		return
	}
	k0 := len(w.buf)
	w.buf = append(w.buf, k...)
	v0 := len(w.buf)
	w.buf = append(w.buf, v...)
	w.wt.tab.add(k0, v0, v0, len(w.buf), false)
}

// Int adds field k with v in decimal.
func (w *ExtWriter) Int(k string, v int64) {
	w.Append(k, func(dst []byte) []byte { return strconv.AppendInt(dst, v, 10) })
}

// Append adds field k with the value app appends to its argument.
func (w *ExtWriter) Append(k string, app func(dst []byte) []byte) {
	if w.spill || !w.room(len(k)+64) {
		w.cmd.SetExt(k, string(app(nil)))
		return
	}
	k0 := len(w.buf)
	w.buf = append(w.buf, k...)
	v0 := len(w.buf)
	w.buf = app(w.buf)
	if len(w.buf) > maxTableHeader {
		v := string(w.buf[v0:])
		w.buf = w.buf[:k0]
		w.flush()
		w.cmd.SetExt(k, v)
		return
	}
	w.wt.tab.add(k0, v0, v0, len(w.buf), false)
}

// room reports whether a field of about n bytes fits the table; when it
// does not, the fields so far move to the map.
func (w *ExtWriter) room(n int) bool {
	if int(w.wt.tab.n) < ExtTableCap && len(w.buf)+n <= maxTableHeader {
		return true
	}
	w.flush()
	return false
}

// flush hands the table to the command and builds its map: every later
// field goes to the map.
func (w *ExtWriter) flush() {
	w.Close()
	w.cmd.ExtMap()
	w.spill = true
}

// Close hands the fields to the command. The buffer is never written
// again, so the command's table points into it as one string.
func (w *ExtWriter) Close() {
	if w.spill || w.cmd == nil {
		return
	}
	w.spill = true // closed: later fields go to the map
	t := &w.wt.tab
	if t.n == 0 {
		return
	}
	t.src = unsafe.String(unsafe.SliceData(w.buf), len(w.buf))
	t.live = true
	prior := w.cmd.ExtMap() // fields set before the writer
	w.cmd.ext = t
	if prior != nil {
		w.cmd.ExtMap() // merge everything into the map
	}
}

// responseWithTable is an answer and its writer's table in one allocation.
type responseWithTable struct {
	cmd Command
	wt  writerTable
}

// NewResponseExt is NewResponse with an ExtWriter for the answer's fields,
// allocated with it: an answer with a few small fields costs one
// allocation. Keys and values beyond 192 bytes cost one more.
func NewResponseExt(req *Command, code int32, remark string) (*Command, ExtWriter) {
	rt := &responseWithTable{}
	rt.cmd = responseTo(req, code, remark)
	return &rt.cmd, ExtWriter{cmd: &rt.cmd, wt: &rt.wt, buf: rt.wt.buf[:0]}
}

// ResponseRoom is memory for one answer made by NewResponseExtIn: a field
// of the state a handler allocates for its request anyway, so that the
// answer costs no allocation of its own. The answer keeps the memory
// around it alive until it is written.
type ResponseRoom struct {
	rt   responseWithTable
	used bool
}

// NewResponseExtIn is NewResponseExtSize with the answer placed in room.
// A nil room, or one already used, gets an answer of its own.
func NewResponseExtIn(room *ResponseRoom, req *Command, code int32, remark string, size int) (*Command, ExtWriter) {
	if room == nil || room.used {
		return NewResponseExtSize(req, code, remark, size)
	}
	room.used = true
	rt := &room.rt
	rt.cmd = responseTo(req, code, remark)
	w := ExtWriter{cmd: &rt.cmd, wt: &rt.wt, buf: rt.wt.buf[:0]}
	if size > writerBuf {
		w.buf = make([]byte, 0, size)
	}
	return &rt.cmd, w
}

// NewResponseExtSize is NewResponseExt for fields of about size bytes of
// keys and values: beyond the 192 bytes that come with the answer, the
// buffer is allocated once at that size instead of growing.
func NewResponseExtSize(req *Command, code int32, remark string, size int) (*Command, ExtWriter) {
	cmd, w := NewResponseExt(req, code, remark)
	if size > writerBuf {
		w.buf = make([]byte, 0, size)
	}
	return cmd, w
}

// ExtWithRoom returns ext field k's value v and a buffer holding the same
// bytes (len(v)) with room more bytes of capacity, from one allocation:
// appending to buf never changes v, so a caller can build a longer value
// (a message's properties with the broker's appended) in place. A JSON
// value written with escapes is unescaped straight into the buffer.
func (c *Command) ExtWithRoom(k string, room int) (v string, buf []byte, ok bool) {
	return c.ExtWithRoomIn(k, room, nil)
}

// ExtWithRoomIn is ExtWithRoom using scratch (from its start) as the
// buffer when its capacity holds the value and room, so that a caller
// with memory of its own for the value allocates nothing; v then aliases
// scratch, which must not be written again below len(buf).
func (c *Command) ExtWithRoomIn(k string, room int, scratch []byte) (v string, buf []byte, ok bool) {
	t := c.liveTable()
	if t == nil {
		if v, ok = c.ExtFields[k]; !ok {
			return "", nil, false
		}
		buf = append(roomBuf(scratch, len(v)+room), v...)
		return bufString(buf), buf, true
	}
	for i := int(t.n) - 1; i >= 0; i-- {
		if t.src[t.tab[i].k0:t.tab[i].k1] == k {
			v, buf = ExtValue{t: t, e: &t.tab[i]}.WithRoomIn(room, scratch)
			return v, buf, true
		}
	}
	return "", nil, false
}
