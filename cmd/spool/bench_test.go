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

func TestRequestTimeoutRenews(t *testing.T) {
	var r requestTimeout
	defer r.stop()
	now := time.Now()
	c1 := r.context(now)
	if c2 := r.context(now.Add(500 * time.Millisecond)); c2 != c1 {
		t.Fatal("context replaced with more than 2 s left")
	}
	c3 := r.context(now.Add(1500 * time.Millisecond))
	if c3 == c1 || c1.Err() == nil {
		t.Fatal("context not renewed (or the old one not cancelled) with under 2 s left")
	}
	if d, ok := c3.Deadline(); !ok || d.Sub(now) != 4500*time.Millisecond {
		t.Fatalf("deadline %v", d.Sub(now))
	}
}
