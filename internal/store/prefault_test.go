package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spoolmq/spool/internal/vfs"
)

// residentPages counts the pages of [from, to) of the file at path that
// are in the page cache (mincore of a mapping of its own).
func residentPages(t *testing.T, path string, from, to int64) int {
	t.Helper()
	f, err := vfs.OS().OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Mmap(from, int(to-from))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Munmap(m)
	n, err := f.Resident(m)
	if err != nil {
		t.Fatal(err)
	}
	return int(n / osPageSize)
}

// With the pwrite write path (the default) the allocator reads the pages
// ahead of the write cursor into the page cache, as it maps them writable
// for mapped writes: the puts' pwrites then find their pages there instead
// of allocating and zeroing one inside the system call.
func TestPwritePagesAheadAreInThePageCache(t *testing.T) {
	cfg := testConfig(t)
	cfg.WriteWithoutMmap = true
	cfg.MappedFileSizeCommitLog = 32 << 20
	var sfs unix.Statfs_t
	if err := unix.Statfs(cfg.StorePathRootDir, &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Type == unix.TMPFS_MAGIC {
		t.Skip("on tmpfs every allocated page is in memory; the test needs a disk file system")
	}
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	body := strings.Repeat("p", 4000)
	var end int64
	for end < 3<<20 { // past three 1 MiB marks, each a look ahead
		r := mustPut(t, st, testMsg("P", 0, body, ""))
		end = r.WroteOffset + int64(r.WroteBytes)
	}
	path := filepath.Join(cfg.StorePathCommitLog, fileName(0))
	// Never written: [4 MiB, 10 MiB) lies ahead of the cursor, within the
	// allocator's 8 MiB look-ahead.
	from, to := int64(4<<20), int64(10<<20)
	want := int((to - from) / osPageSize)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := residentPages(t, path, from, to)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d pages ahead of the write cursor (%d) are in the page cache", got, want, end)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPrefaultNext checks the allocator's choice of the next chunk to
// pre-fault: small chunks from where the last ended, never at the write
// cursor (a put would wait for pages the kernel holds while reading them
// in), up to the look-ahead and the file's end.
func TestPrefaultNext(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name              string
		warmed, pos, size int64
		wantFrom, wantEnd int64
	}{
		{"ahead of the writer", 4 * mib, 0, 64 * mib, 4 * mib, 4*mib + prefaultChunk},
		{"the writer caught up", 2 * mib, 2*mib - 100, 64 * mib, 3*mib - 100, 3*mib - 100 + prefaultChunk},
		{"the writer passed it", 2 * mib, 5 * mib, 64 * mib, 6 * mib, 6*mib + prefaultChunk},
		{"a new file", -7 * mib, 0, 64 * mib, prefaultGap, prefaultGap + prefaultChunk},
		{"at the look-ahead", 8 * mib, 0, 64 * mib, 8 * mib, 8 * mib},
		{"a chunk cut by the look-ahead", 8*mib - 4096, 0, 64 * mib, 8*mib - 4096, 8 * mib},
		{"a chunk cut by the file's end", 63 * mib, 60 * mib, 63*mib + 8192, 63 * mib, 63*mib + 8192},
		{"the file warmed to its end", 64 * mib, 60 * mib, 64 * mib, 64 * mib, 64 * mib},
	} {
		from, end := prefaultNext(c.warmed, c.pos, c.size)
		if from != c.wantFrom || end != c.wantEnd {
			t.Errorf("%s: [%d, %d), want [%d, %d)", c.name, from, end, c.wantFrom, c.wantEnd)
		}
		if from < end && (from < c.pos+prefaultGap || end-from > prefaultChunk) {
			t.Errorf("%s: chunk [%d, %d) within the gap of the cursor %d or over a chunk", c.name, from, end, c.pos)
		}
	}
}
