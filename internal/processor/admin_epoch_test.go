package processor

import (
	"encoding/json"
	"testing"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// TestGetBrokerEpochCache: the answer is RocketMQ's EpochEntryCache read
// from the epoch file: each entry ends where the next starts, the last at
// Long.MAX_VALUE, with the broker's identity and the CommitLog's end.
func TestGetBrokerEpochCache(t *testing.T) {
	ef, err := store.OpenEpochFile(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 4096}} {
		if err := ef.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	a, d := newAdmin(t, &adminStore{})
	d.Epochs = func() EpochTable { return ef }
	d.BrokerID = func() int64 { return 2 }
	d.MaxPhyOffset = func() int64 { return 8192 }
	a = NewAdmin(d)
	resp := a.HandleGetBrokerEpochCache(nil, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
	want := `{"brokerId":2,"brokerName":"b","clusterName":"c","epochList":[` +
		`{"endOffset":4096,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":3,"startOffset":4096}],"maxOffset":8192}`
	if string(resp.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", resp.Body, want)
	}
	var back EpochEntryCache
	if err := json.Unmarshal(resp.Body, &back); err != nil || len(back.EpochList) != 2 {
		t.Fatalf("decode %v %+v", err, back)
	}
	// An empty table is an empty list, not null.
	ef2, err := store.OpenEpochFile(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.Epochs = func() EpochTable { return ef2 }
	resp = NewAdmin(d).HandleGetBrokerEpochCache(nil, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if resp.Code != remoting.Success || string(resp.Body) != `{"brokerId":2,"brokerName":"b","clusterName":"c","epochList":[],"maxOffset":8192}` {
		t.Fatalf("empty table: %d %s", resp.Code, resp.Body)
	}
}

// TestGetBrokerEpochCacheOutsideControllerMode: RocketMQ's answer on a
// broker outside controller mode.
func TestGetBrokerEpochCacheOutsideControllerMode(t *testing.T) {
	a, d := newAdmin(t, &adminStore{})
	for _, epochs := range []func() EpochTable{nil, func() EpochTable { return nil }} {
		d.Epochs = epochs
		a = NewAdmin(d)
		resp := a.HandleGetBrokerEpochCache(nil, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
		if resp.Code != remoting.SystemError || resp.Remark != "this request only for controllerMode " {
			t.Fatalf("code %d %q", resp.Code, resp.Remark)
		}
	}
}
