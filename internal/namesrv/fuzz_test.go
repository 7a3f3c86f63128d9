package namesrv

import (
	"encoding/json"
	"errors"
	"testing"
)

func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	f.Add(sampleBody().Encode(false), false, int32(479))
	f.Add(sampleBody().Encode(true), true, int32(479))
	f.Add(javaCompressed(`{"counter":1}`, []string{"T 1 1 6 SINGLE_TAG {}"}, "[]", false), true, int32(317))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{}},"dataVersion":{}}}`), false, int32(0))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicQueueMappingDetailMap":{"T":{"hostedQueues":{0:[]}}}}}`), false, int32(479))
	f.Fuzz(func(t *testing.T, data []byte, compressed bool, version int32) {
		b, err := DecodeRegisterBrokerBody(data, compressed, version)
		if err != nil {
			if !errors.Is(err, ErrBadRegisterBody) {
				t.Fatalf("error not marked: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes and decodes to the same topics.
		again, err := DecodeRegisterBrokerBody(b.Encode(false), false, version)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if len(again.TopicConfigSerializeWrapper.TopicConfigTable) != len(b.TopicConfigSerializeWrapper.TopicConfigTable) {
			t.Fatalf("topic count changed")
		}
	})
}

func FuzzQuoteBareKeys(f *testing.F) {
	for _, s := range []string{`{0:"a",1:"b"}`, `{"a":[1,{2:3}]}`, `{"s":"{0:1}\"x"}`, `[`, `{"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			// Valid JSON is never rewritten into something else.
			if out, fixed := quoteBareKeys(data); fixed && !json.Valid(out) {
				t.Fatalf("valid input %q became invalid %q", data, out)
			}
		}
		var v any
		_ = unmarshalJavaJSON(data, &v)
	})
}
