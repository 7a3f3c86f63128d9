package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// DataVersion is a broker's topic-config version. The name server compares
// it to skip re-applying an unchanged registration.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// Encode returns the compact JSON form.
func (v DataVersion) Encode() []byte { return mustMarshal(v) }

// TopicConfig is a broker's topic as registration bodies carry it.
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes,omitempty"`
}

// Defaults of a TopicConfig field that a body leaves out (RocketMQ's
// TopicConfig constructor values).
const (
	defaultTopicQueueNums = 16
	defaultTopicPerm      = 6 // read | write
	filterSingleTag       = "SINGLE_TAG"
)

// UnmarshalJSON fills RocketMQ's defaults for fields the body omits.
func (t *TopicConfig) UnmarshalJSON(b []byte) error {
	type plain TopicConfig
	p := plain{ReadQueueNums: defaultTopicQueueNums, WriteQueueNums: defaultTopicQueueNums,
		Perm: defaultTopicPerm, TopicFilterType: filterSingleTag}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = TopicConfig(p)
	return nil
}

// encodeText is the space-separated form of the compressed body:
// "name read write perm filterType attributesJSON".
func (t *TopicConfig) encodeText() string {
	ft := t.TopicFilterType
	if ft == "" {
		ft = filterSingleTag
	}
	attrs := t.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	return t.TopicName + " " + strconv.Itoa(int(t.ReadQueueNums)) + " " +
		strconv.Itoa(int(t.WriteQueueNums)) + " " + strconv.Itoa(int(t.Perm)) + " " +
		ft + " " + string(mustMarshal(attrs))
}

// decodeTopicConfigText parses the text form. Like RocketMQ, unparsable
// attributes are ignored (their JSON may legitimately contain spaces).
func decodeTopicConfigText(s string) (TopicConfig, error) {
	parts := strings.Split(s, " ")
	if len(parts) < 5 {
		return TopicConfig{}, fmt.Errorf("%w: topic config %q has %d fields, want >= 5", ErrBadRegisterBody, s, len(parts))
	}
	t := TopicConfig{TopicName: parts[0], TopicFilterType: parts[4]}
	for i, dst := range []*int32{&t.ReadQueueNums, &t.WriteQueueNums, &t.Perm} {
		n, err := strconv.ParseInt(parts[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%w: topic config %q: %v", ErrBadRegisterBody, s, err)
		}
		*dst = int32(n)
	}
	if len(parts) >= 6 {
		var attrs map[string]string
		if json.Unmarshal([]byte(strings.Join(parts[5:], " ")), &attrs) == nil && len(attrs) > 0 {
			t.Attributes = attrs
		}
	}
	return t, nil
}

// TopicConfigSerializeWrapper is the part of a registration the name server
// uses: the broker's topics and their version.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the REGISTER_BROKER request body.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// maxInflatedRegisterBody bounds what a compressed registration may expand
// to, so a small hostile body cannot make the server allocate without limit.
const maxInflatedRegisterBody = 64 << 20

// versionV5_0_0 is MQVersion V5_0_0's ordinal: compressed bodies from such
// brokers end with the static-topic mapping section.
const versionV5_0_0 = 413

// Encode returns the body as JSON, or in the compressed form (§3.2 of the
// protocol reference; see the package doc) when compressed is true. The
// compressed form always ends with an empty mapping section, as a 5.x
// broker writes it.
func (b *RegisterBrokerBody) Encode(compressed bool) []byte {
	if !compressed {
		c := *b
		if c.FilterServerList == nil {
			c.FilterServerList = []string{}
		}
		if c.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			c.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		return mustMarshal(&c)
	}
	var raw bytes.Buffer
	putChunk := func(p []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		raw.Write(n[:])
		raw.Write(p)
	}
	putInt := func(v int) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(v))
		raw.Write(n[:])
	}
	w := b.TopicConfigSerializeWrapper
	putChunk(w.DataVersion.Encode())
	names := make([]string, 0, len(w.TopicConfigTable))
	for n := range w.TopicConfigTable {
		names = append(names, n)
	}
	sort.Strings(names)
	putInt(len(names))
	for _, n := range names {
		tc := w.TopicConfigTable[n]
		if tc.TopicName == "" {
			tc.TopicName = n
		}
		putChunk([]byte(tc.encodeText()))
	}
	fl := b.FilterServerList
	if fl == nil {
		fl = []string{}
	}
	putChunk(mustMarshal(fl))
	putInt(0) // topic queue mappings: none
	var out bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&out, zlib.BestCompression) // valid level: no error
	zw.Write(raw.Bytes())                                    // writes to a bytes.Buffer cannot fail
	zw.Close()
	return out.Bytes()
}

// DecodeRegisterBrokerBody decodes a REGISTER_BROKER body in either form.
// version is the request's version field: the compressed form of a broker
// at or above V5_0_0 carries a trailing mapping section, which is checked
// for well-formedness and otherwise ignored (static topics are not built).
func DecodeRegisterBrokerBody(data []byte, compressed bool, version int32) (*RegisterBrokerBody, error) {
	if !compressed {
		var b RegisterBrokerBody
		if err := unmarshalJavaJSON(data, &b); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRegisterBody, err)
		}
		if b.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
			if tc.TopicName == "" {
				tc.TopicName = name
				b.TopicConfigSerializeWrapper.TopicConfigTable[name] = tc
			}
		}
		return &b, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: zlib: %v", ErrBadRegisterBody, err)
	}
	defer zr.Close()
	r := &chunkReader{r: io.LimitReader(zr, maxInflatedRegisterBody), budget: maxInflatedRegisterBody}
	b := &RegisterBrokerBody{}
	w := &b.TopicConfigSerializeWrapper
	w.TopicConfigTable = map[string]TopicConfig{}
	dv, err := r.chunk()
	if err != nil {
		return nil, err
	}
	if err := unmarshalJavaJSON(dv, &w.DataVersion); err != nil {
		return nil, fmt.Errorf("%w: data version: %v", ErrBadRegisterBody, err)
	}
	n, err := r.int()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		p, err := r.chunk()
		if err != nil {
			return nil, err
		}
		tc, err := decodeTopicConfigText(string(p))
		if err != nil {
			return nil, err
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fl, err := r.chunk()
	if err != nil {
		return nil, err
	}
	// RocketMQ ignores an unparsable filter-server list; so does Spool.
	_ = unmarshalJavaJSON(fl, &b.FilterServerList)
	if version >= versionV5_0_0 {
		m, err := r.int()
		if err != nil {
			return nil, err
		}
		for i := 0; i < m; i++ {
			if _, err := r.chunk(); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// chunkReader reads the compressed body's big-endian int and
// length-prefixed chunks, refusing lengths beyond what is left of budget
// before allocating.
type chunkReader struct {
	r      io.Reader
	budget int
}

func (c *chunkReader) int() (int, error) {
	var n [4]byte
	if _, err := io.ReadFull(c.r, n[:]); err != nil {
		return 0, fmt.Errorf("%w: truncated: %v", ErrBadRegisterBody, err)
	}
	c.budget -= 4
	v := int32(binary.BigEndian.Uint32(n[:]))
	if v < 0 || int(v) > c.budget {
		return 0, fmt.Errorf("%w: count or length %d out of range", ErrBadRegisterBody, v)
	}
	return int(v), nil
}

func (c *chunkReader) chunk() ([]byte, error) {
	n, err := c.int()
	if err != nil {
		return nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c.r, p); err != nil {
		return nil, fmt.Errorf("%w: truncated chunk: %v", ErrBadRegisterBody, err)
	}
	c.budget -= n
	return p, nil
}
