package metadata

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A metadata write that finds the disk full is retried by the background
// writer until it succeeds; the latest snapshot is what lands.
func TestMetadataFileRetriesAfterENOSPC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topics.json")
	var mu sync.Mutex
	content := []byte(`{"v":1}`)
	f := NewFile(path, func() ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]byte(nil), content...), nil
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.retryMin, f.retryMax = time.Millisecond, 2*time.Millisecond
	fails := 5
	written := make(chan struct{})
	f.write = func(p string, data []byte) error {
		mu.Lock()
		full := fails > 0
		if full {
			fails--
			content = []byte(`{"v":2}`) // a change while the disk is full
		}
		mu.Unlock()
		if full {
			return &os.PathError{Op: "write", Path: p + ".tmp", Err: syscall.ENOSPC}
		}
		if err := WriteFileAtomic(p, data); err != nil {
			return err
		}
		close(written)
		return nil
	}
	f.Start()
	f.MarkDirty()
	<-written
	f.write = WriteFileAtomic // the final flush at close writes for real
	if n := f.failures.Load(); n != 5 {
		t.Fatalf("%d failed writes counted, want 5", n)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(`{"v":2}`)) {
		t.Fatalf("file holds %s", got)
	}
	if _, err := os.Stat(path + ".tmp"); err == nil {
		t.Fatal("temporary file left")
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
