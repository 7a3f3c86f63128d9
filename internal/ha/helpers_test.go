package ha

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/clock"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type testStore struct {
	st  *store.DefaultMessageStore
	log *store.ReplicaLog
	dir string
	cfg store.Config
}

func openStore(t testing.TB, fs vfs.FS) *testStore {
	t.Helper()
	dir := t.TempDir()
	return openStoreAt(t, testkit.StoreConfig(dir, testkit.Small), fs)
}

func openStoreAt(t testing.TB, cfg store.Config, fs vfs.FS) *testStore {
	t.Helper()
	st, err := store.Open(cfg, fs, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	ts := &testStore{st: st, log: store.NewReplicaLog(st), dir: cfg.StorePathRootDir, cfg: cfg}
	t.Cleanup(func() { st.Shutdown() })
	return ts
}

func testMsg(topic string, qid int32, body []byte) *message.Inner {
	return &message.Inner{
		Topic: topic, QueueID: qid, Body: body, Properties: map[string]string{message.PropertyTags: "A"},
		BornTimestamp: 1700000000000,
		BornHost:      message.Addr{IP: []byte{127, 0, 0, 1}, Port: 5000},
		StoreHost:     message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911},
	}
}

// put stores one message and returns the end of its record.
func put(t testing.TB, st *store.DefaultMessageStore, m *message.Inner) int64 {
	t.Helper()
	for i := 0; ; i++ {
		ch := make(chan store.PutResult, 1)
		st.PutMessage(m, func(r store.PutResult) { ch <- r })
		r := <-ch
		if r.Status == store.OSPageCacheBusy && i < 100000 {
			runtime.Gosched() // the allocator is behind (tiny files): retry
			continue
		}
		if r.Status != store.PutOK {
			t.Fatalf("put: %d %s", r.Status, r.Remark)
		}
		return r.WroteOffset + int64(r.WroteBytes)
	}
}

func fill(t testing.TB, st *store.DefaultMessageStore, n int) int64 {
	t.Helper()
	var end int64
	for i := 0; i < n; i++ {
		body := fmt.Appendf(nil, "body-%d-%s", i, bytes.Repeat([]byte{'x'}, i%300))
		end = put(t, st, testMsg("T", int32(i%2), body))
	}
	return end
}

// eventually polls cond until it holds (20 s at most); it is a wait for a
// state, never a timing assertion.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func admitAll(net.Addr) (string, bool) { return "slave-1", true }

func startMaster(t testing.TB, cfg MasterConfig) (*Master, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMaster(cfg)
	go m.Serve(ln)
	t.Cleanup(m.Close)
	return m, ln.Addr().String()
}

func startSlave(t testing.TB, cfg SlaveConfig) *Slave {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s := NewSlave(cfg)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func ackOf(m *Master) int64 {
	best := int64(-1)
	for _, s := range m.Slaves() {
		best = max(best, s.AckOffset)
	}
	return best
}

// sameLogs compares the CommitLog bytes of two logs up to their end.
func sameLogs(t testing.TB, a, b Log) {
	t.Helper()
	if a.MaxOffset() != b.MaxOffset() {
		t.Fatalf("logs end at %d and %d", a.MaxOffset(), b.MaxOffset())
	}
	x, y := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := a.MinOffset(); off < a.MaxOffset(); {
		n, err := a.ReadAt(x, off)
		if err != nil || n == 0 {
			t.Fatalf("ReadAt(%d): %d, %v", off, n, err)
		}
		k, err := b.ReadAt(y[:n], off)
		if err != nil || k != n {
			t.Fatalf("ReadAt(%d) on the copy: %d, %v; want %d", off, k, err, n)
		}
		if !bytes.Equal(x[:n], y[:n]) {
			t.Fatalf("logs differ in [%d, %d)", off, off+int64(n))
		}
		off += int64(n)
	}
}

// sameQueues compares the consume-queue files of two stopped stores.
func sameQueues(t testing.TB, mdir, sdir string) {
	t.Helper()
	n := 0
	err := filepath.Walk(filepath.Join(mdir, "consumequeue"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mdir, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(sdir, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s differs", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no consume-queue files compared")
	}
}

var _ clock.Clock = (*clock.Manual)(nil)
