package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func sampleBody() *RegisterBrokerBody {
	return &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]TopicConfig{
				"TopicA": {TopicName: "TopicA", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"},
				"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG",
					Attributes: map[string]string{"+message.type": "NORMAL"}},
			},
			DataVersion: DataVersion{StateVersion: 0, Timestamp: 1700000000000, Counter: 5},
		},
		FilterServerList: []string{},
	}
}

func TestRegisterBodyRoundTrip(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		b := sampleBody()
		got, err := DecodeRegisterBrokerBody(b.Encode(compressed), compressed, 479)
		if err != nil {
			t.Fatalf("compressed=%v: %v", compressed, err)
		}
		if !reflect.DeepEqual(got, b) {
			t.Fatalf("compressed=%v:\n got %+v\nwant %+v", compressed, got, b)
		}
	}
}

// javaCompressed builds a compressed body the way a pre-5.0 broker does: no
// mapping section, and topic lines written by hand.
func javaCompressed(dv string, topics []string, filter string, mapping bool) []byte {
	var raw bytes.Buffer
	chunk := func(s string) {
		binary.Write(&raw, binary.BigEndian, int32(len(s)))
		raw.WriteString(s)
	}
	chunk(dv)
	binary.Write(&raw, binary.BigEndian, int32(len(topics)))
	for _, tp := range topics {
		chunk(tp)
	}
	chunk(filter)
	if mapping {
		binary.Write(&raw, binary.BigEndian, int32(1))
		chunk(`{"topic":"S","bname":"a"}`)
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(raw.Bytes())
	w.Close()
	return z.Bytes()
}

func TestDecodeCompressedJavaForms(t *testing.T) {
	old := javaCompressed(`{"counter":3,"stateVersion":0,"timestamp":17}`,
		[]string{`T1 4 4 6 SINGLE_TAG {}`, `T2 2 1 2 MULTI_TAG`, `T3 1 1 6 SINGLE_TAG {"a b":"c"}`}, `[]`, false)
	b, err := DecodeRegisterBrokerBody(old, true, 400)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]TopicConfig{
		"T1": {TopicName: "T1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		"T2": {TopicName: "T2", ReadQueueNums: 2, WriteQueueNums: 1, Perm: 2, TopicFilterType: "MULTI_TAG"},
		"T3": {TopicName: "T3", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{"a b": "c"}},
	}
	if !reflect.DeepEqual(b.TopicConfigSerializeWrapper.TopicConfigTable, want) {
		t.Fatalf("topics %+v", b.TopicConfigSerializeWrapper.TopicConfigTable)
	}
	if b.TopicConfigSerializeWrapper.DataVersion != (DataVersion{Counter: 3, Timestamp: 17}) {
		t.Fatalf("dv %+v", b.TopicConfigSerializeWrapper.DataVersion)
	}
	v5 := javaCompressed(`{"counter":1}`, []string{`T 1 1 6 SINGLE_TAG {}`}, `["f:1"]`, true)
	b, err = DecodeRegisterBrokerBody(v5, true, 479)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.TopicConfigSerializeWrapper.TopicConfigTable) != 1 || !reflect.DeepEqual(b.FilterServerList, []string{"f:1"}) {
		t.Fatalf("%+v", b)
	}
}

func TestDecodeRegisterBodyErrors(t *testing.T) {
	var huge bytes.Buffer
	w := zlib.NewWriter(&huge)
	binary.Write(w, binary.BigEndian, int32(0x7fffffff)) // data version length far past the budget
	w.Close()
	var negative bytes.Buffer
	w = zlib.NewWriter(&negative)
	binary.Write(w, binary.BigEndian, int32(-5))
	w.Close()
	cases := map[string]struct {
		data       []byte
		compressed bool
	}{
		"not zlib":        {[]byte("hello"), true},
		"huge length":     {huge.Bytes(), true},
		"negative length": {negative.Bytes(), true},
		"truncated":       {javaCompressed(`{}`, []string{`T 1 1 6 SINGLE_TAG`}, `[]`, false)[:12], true},
		"bad topic line":  {javaCompressed(`{}`, []string{`T x 1 6 SINGLE_TAG`}, `[]`, false), true},
		"short topic":     {javaCompressed(`{}`, []string{`T 1 1`}, `[]`, false), true},
		"missing mapping": {javaCompressed(`{}`, nil, `[]`, false), true},
		"bad json":        {[]byte(`{"topicConfigSerializeWrapper":`), false},
	}
	for name, c := range cases {
		if _, err := DecodeRegisterBrokerBody(c.data, c.compressed, 479); !errors.Is(err, ErrBadRegisterBody) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestTopicConfigDefaults(t *testing.T) {
	b, err := DecodeRegisterBrokerBody([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{}},"dataVersion":{"counter":2}}}`), false, 479)
	if err != nil {
		t.Fatal(err)
	}
	want := TopicConfig{TopicName: "T", ReadQueueNums: 16, WriteQueueNums: 16, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if got := b.TopicConfigSerializeWrapper.TopicConfigTable["T"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}
