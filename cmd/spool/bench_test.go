package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// The reused builder gives every request the fields of a fresh one: its
// queue, its born time and its own UNIQ_KEY in the properties encoding.
func TestSendBuilderReuse(t *testing.T) {
	var b sendBuilder
	t0 := time.UnixMilli(1_780_000_000_123)
	body := []byte("hello")
	seen := map[string]bool{}
	for i, q := range []int{3, 3, 5} {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		req := b.build("T", q, body, 1, remoting.SerializeRocketMQ, now)
		if req.Code != remoting.SendMessageV2 || req.Serialize != remoting.SerializeRocketMQ || string(req.Body) != "hello" {
			t.Fatalf("request %d: %+v", i, req)
		}
		if req.Ext("b") != "T" || req.Ext("e") != strconv.Itoa(q) || req.Ext("g") != strconv.FormatInt(now.UnixMilli(), 10) {
			t.Fatalf("request %d ext %v", i, req.ExtFields)
		}
		props := message.DecodeProperties(req.Ext("i"))
		id := props[message.PropertyUniqClientMessageIDKeyIdx]
		if len(props) != 1 || len(id) != 32 || seen[id] {
			t.Fatalf("request %d properties %q", i, req.Ext("i"))
		}
		if want := message.EncodeProperties(props); req.Ext("i") != want {
			t.Fatalf("properties %q, encoder gives %q", req.Ext("i"), want)
		}
		seen[id] = true
	}
}
