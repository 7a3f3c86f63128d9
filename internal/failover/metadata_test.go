package failover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

func TestIdentityFilesLayout(t *testing.T) {
	dir := t.TempDir()
	f := IdentityFiles{FS: vfs.OS(), Root: dir}
	if _, ok, err := f.Load(false); ok || err != nil {
		t.Fatalf("missing file: ok=%v err=%v", ok, err)
	}
	if err := f.Store(Identity{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 3, CheckCode: "10.0.0.1:10911;1700000000000"}, true); err != nil {
		t.Fatal(err)
	}
	if err := f.Store(Identity{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 3}, false); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		TempIdentityFile: "DefaultCluster#broker-a#3#10.0.0.1:10911;1700000000000",
		IdentityFile:     "DefaultCluster#broker-a#3",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
	id, ok, err := f.Load(true)
	if !ok || err != nil || id.BrokerID != 3 || id.CheckCode != "10.0.0.1:10911;1700000000000" {
		t.Fatalf("temp read back %+v ok=%v err=%v", id, ok, err)
	}
	if err := f.Remove(true); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.Load(true); ok {
		t.Fatal("temp file still there")
	}
	if err := f.Remove(true); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	if err := f.Store(Identity{ClusterName: "a#b", BrokerName: "x", BrokerID: 1}, false); err == nil {
		t.Fatal("a '#' in a field was written")
	}
}

func TestDecodeIdentity(t *testing.T) {
	for _, tt := range []struct {
		s    string
		temp bool
		ok   bool
		id   int64
	}{
		{"c#b#2", false, true, 2},
		{"c#b#2\n", false, true, 2},
		{"c#b#2#a;1", true, true, 2},
		{"c#b#2", true, false, 0},
		{"c#b#x", false, false, 0},
		{"null#b#2", false, false, 0},
		{"c#b#2#null", true, false, 0},
		{"", false, false, 0},
		{"c#b", false, false, 0},
	} {
		got, ok := decodeIdentity(tt.s, tt.temp)
		if ok != tt.ok || got.BrokerID != tt.id {
			t.Errorf("%q temp=%v: %+v ok=%v, want id %d ok=%v", tt.s, tt.temp, got, ok, tt.id, tt.ok)
		}
	}
}
