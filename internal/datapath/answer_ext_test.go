package datapath

import (
	"maps"
	"strconv"
	"testing"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// sameOnTheWire fails unless typed (an answer whose fields were written
// without a map) and mapped (the same answer built with SetExt) encode to
// frames of the same length that decode to the same command, in both
// serializations: a field dropped, renamed or formatted differently shows.
func sameOnTheWire(t *testing.T, typed, mapped *remoting.Command) {
	t.Helper()
	if typed.ExtFields != nil {
		t.Errorf("the typed answer built a map: %v", typed.ExtFields)
	}
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		typed.Serialize, mapped.Serialize = st, st
		a, err := remoting.Encode(typed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := remoting.Encode(mapped)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Errorf("serialization %d: typed frame of %d bytes, map-based %d", st, len(a), len(b))
		}
		da, err := remoting.DecodeFrame(a[4:])
		if err != nil {
			t.Fatal(err)
		}
		db, err := remoting.DecodeFrame(b[4:])
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(da.ExtFields, db.ExtFields) || len(da.ExtFields) != len(mapped.ExtFields) {
			t.Errorf("serialization %d: typed fields %v, map-based %v", st, da.ExtFields, db.ExtFields)
		}
		if da.Code != db.Code || da.Remark != db.Remark || da.Opaque != db.Opaque || da.Flag != db.Flag ||
			da.Version != db.Version || da.Language != db.Language {
			t.Errorf("serialization %d: typed %+v, map-based %+v", st, da, db)
		}
	}
}

func TestPullAnswerFieldsMatchTheMap(t *testing.T) {
	req := &remoting.Command{Code: remoting.PullMessage, Opaque: 77}
	// Every case after the first is built in the room of a released and
	// reused pullReply, as the pool hands one to the next pull: the answer
	// must be the same on the wire as one of its own. (That the room is
	// used rather than an allocation of its own is held by
	// TestSendAndPullAllocations in internal/broker.)
	reused := new(pullReply)
	for i, c := range [][4]int64{{0, 64, 0, 128}, {1, -1, 3, 9223372036854775807}, {0, 0, 0, 0}} {
		var room *remoting.ResponseRoom
		if i > 0 {
			reused.Release()
			reused = pullReplies.Get().(*pullReply)
			room = &reused.answer
		}
		typed := pullAnswer(room, req, remoting.Success, "FOUND", c[0], c[1], c[2], c[3])
		mapped := remoting.NewResponse(req, remoting.Success, "FOUND")
		mapped.SetExt("suggestWhichBrokerId", strconv.FormatInt(c[0], 10))
		mapped.SetExt("nextBeginOffset", strconv.FormatInt(c[1], 10))
		mapped.SetExt("minOffset", strconv.FormatInt(c[2], 10))
		mapped.SetExt("maxOffset", strconv.FormatInt(c[3], 10))
		sameOnTheWire(t, typed, mapped)
		if v, _ := strconv.ParseInt(typed.Ext("nextBeginOffset"), 10, 64); v != c[1] {
			t.Errorf("nextBeginOffset %q, want %d", typed.Ext("nextBeginOffset"), c[1])
		}
	}
}

func TestSendAnswerFieldsMatchTheMap(t *testing.T) {
	host := message.Addr{IP: []byte{10, 0, 0, 7}, Port: 10911}
	for _, cfg := range []*Config{{RegionID: "DefaultRegion", TraceOn: true}, {RegionID: "", TraceOn: false}} {
		d := &Path{config: func() *Config { return cfg }, storeHost: func() message.Addr { return host }}
		for _, c := range []struct {
			uniq    string
			offsets []int64
		}{{"7F0000010001000000000001", []int64{4096}}, {"", []int64{0}}, {"AC11", []int64{1, 2, 3}}, {"", batchOffsets(32)}} {
			req := &remoting.Command{Code: remoting.SendMessage, Opaque: 9}
			r := store.PutResult{Status: store.PutOK, WroteOffset: c.offsets[0], QueueOffset: 42}
			typed := d.sendResponse(req, r, 3, c.uniq, c.offsets, nil)
			mapped := remoting.NewResponse(req, remoting.Success, "")
			var ids []byte
			for i, off := range c.offsets {
				if i > 0 {
					ids = append(ids, ',')
				}
				ids = message.AppendOffsetMsgID(ids, host, off)
			}
			mapped.SetExt("msgId", string(ids))
			mapped.SetExt("queueId", "3")
			mapped.SetExt("queueOffset", "42")
			if c.uniq != "" {
				mapped.SetExt("transactionId", c.uniq)
			}
			mapped.SetExt(message.PropertyMsgRegion, cfg.RegionID)
			mapped.SetExt(message.PropertyTraceSwitch, strconv.FormatBool(cfg.TraceOn))
			sameOnTheWire(t, typed, mapped)
			// In the send's room the answer is the same; a room already
			// used gives the next answer one of its own.
			var room remoting.ResponseRoom
			inRoom := d.sendResponse(req, r, 3, c.uniq, c.offsets, &room)
			sameOnTheWire(t, inRoom, mapped)
			again := d.sendResponse(req, r, 3, c.uniq, c.offsets, &room)
			if again == inRoom {
				t.Fatal("a used room was used again")
			}
			sameOnTheWire(t, again, mapped)
			sameOnTheWire(t, inRoom, mapped)
			// A single send's answer is one allocation, fields included,
			// and none in a room.
			if len(c.offsets) == 1 {
				if n := testing.AllocsPerRun(50, func() { d.sendResponse(req, r, 3, c.uniq, c.offsets, nil) }); n > 1 {
					t.Errorf("a single send's answer costs %.0f allocations, want 1", n)
				}
				if n := testing.AllocsPerRun(50, func() {
					room = remoting.ResponseRoom{}
					d.sendResponse(req, r, 3, c.uniq, c.offsets, &room)
				}); n > 0 {
					t.Errorf("a single send's answer in its room costs %.0f allocations, want 0", n)
				}
			}
		}
	}
}

func batchOffsets(n int) []int64 {
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = int64(i) * 1100
	}
	return offs
}
