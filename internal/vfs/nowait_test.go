package vfs

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// A file's bytes just written are in the page cache: ReadAtNoWait reads
// them as ReadAt does. Once dropped from the cache (synced, then
// FADV_DONTNEED), the same read returns ErrWouldBlock instead of waiting.
func TestReadAtNoWaitReadsOnlyWhatIsInMemory(t *testing.T) {
	f, err := OS().Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 20)
	if n, err := ReadAtNoWait(f, got, 4096*3+7); err != nil || n != len(got) || !bytes.Equal(got, data[4096*3+7:4096*3+27]) {
		t.Fatalf("cached read: %d, %v, %q", n, err, got)
	}
	big := make([]byte, 256<<10)
	if n, err := ReadAtNoWait(f, big, 512<<10); err != nil || n != len(big) || !bytes.Equal(big, data[512<<10:768<<10]) {
		t.Fatalf("cached read of 256 KiB: %d, %v", n, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Fadvise(0, int64(len(data)), FadvDontNeed); err != nil {
		t.Skipf("fadvise: %v", err)
	}
	if _, err := ReadAtNoWait(f, got, 100); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("read of evicted bytes: %v, want ErrWouldBlock", err)
	}
	if _, err := ReadAtNoWait(struct{ File }{f}, got, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("a file that cannot tell: %v, want ErrWouldBlock", err)
	}
}
