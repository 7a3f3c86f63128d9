package namesrv

import (
	"reflect"
	"testing"
)

func TestQuoteBareKeys(t *testing.T) {
	tests := []struct {
		in, want string
		fixed    bool
	}{
		{`{"a":1}`, `{"a":1}`, false},
		{`{0:"x:1",1:"y"}`, `{"0":"x:1","1":"y"}`, true},
		{`{"m":{0:[1,2],-1:{}}, "s":"{0:1}"}`, `{"m":{"0":[1,2],"-1":{}}, "s":"{0:1}"}`, true},
		{`[1,2,{3:4}]`, `[1,2,{"3":4}]`, true},
		{`{ 7 : "a" }`, `{ "7" : "a" }`, true},
		{`{"esc\"q":{5:1}}`, `{"esc\"q":{"5":1}}`, true},
	}
	for _, tt := range tests {
		got, fixed := quoteBareKeys([]byte(tt.in))
		if fixed != tt.fixed || (fixed && string(got) != tt.want) {
			t.Errorf("%s: got %s fixed=%v", tt.in, got, fixed)
		}
	}
	var m map[string]map[string]string
	if err := unmarshalJavaJSON([]byte(`{"a":{0:"x"}}`), &m); err != nil || !reflect.DeepEqual(m, map[string]map[string]string{"a": {"0": "x"}}) {
		t.Fatalf("%v %v", m, err)
	}
	if err := unmarshalJavaJSON([]byte(`{"a":`), &m); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}
