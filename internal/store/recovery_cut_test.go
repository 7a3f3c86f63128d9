package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// crashedStore writes n SYNC_FLUSH puts, crashes and returns the
// CommitLog's end, the file holding it and the file after it.
func crashedStore(t *testing.T, cfg Config, n int) (end int64, cur, next string) {
	t.Helper()
	st := openStarted(t, cfg, vfs.OS())
	for i := 0; i < n; i++ {
		mustPut(t, st, testMsg("T", 0, fmt.Sprint("t", i), ""))
	}
	end = st.commitLog.visible.Load()
	mf := st.commitLog.mfq.find(end)
	if mf == nil {
		t.Fatalf("no file holds the end %d", end)
	}
	cur = mf.path
	mf.release()
	next = filepath.Join(cfg.StorePathCommitLog, fileName(mf.from+cfg.MappedFileSizeCommitLog))
	crash(st)
	return end, cur, next
}

func reopenLogged(t *testing.T, cfg Config) (*DefaultMessageStore, string) {
	t.Helper()
	var logs lockedBuffer
	st, err := Open(cfg, vfs.OS(), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	return st, logs.String()
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func recoveredLine(t *testing.T, logs string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "recovered after a crash") {
			return l
		}
	}
	t.Fatalf("no recovery line in the log:\n%s", logs)
	return ""
}

// TestRecoveryCountsOnlyCutBytes: truncatedBytes counts the data recovery
// cut, not the zeros of the current file's rest and of prepared files.
func TestRecoveryCountsOnlyCutBytes(t *testing.T) {
	base := testConfig(t)
	base.FlushDiskType = SyncFlush

	t.Run("nothing cut", func(t *testing.T) {
		cfg := base
		cfg.StorePathRootDir = t.TempDir()
		cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
		end, _, _ := crashedStore(t, cfg, 300)
		st, logs := reopenLogged(t, cfg)
		defer st.Shutdown()
		if got := st.Stats().TruncatedBytes; got != 0 {
			t.Fatalf("TruncatedBytes %d after a crash that left no tail", got)
		}
		if l := recoveredLine(t, logs); !strings.Contains(l, "truncatedBytes=0 ") {
			t.Fatalf("recovery line: %s", l)
		}
		if got := st.commitLog.visible.Load(); got != end {
			t.Fatalf("recovered end %d, want %d", got, end)
		}
	})

	t.Run("a torn tail in the current file", func(t *testing.T) {
		cfg := base
		cfg.StorePathRootDir = t.TempDir()
		cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
		end, cur, _ := crashedStore(t, cfg, 300)
		pos := end % cfg.MappedFileSizeCommitLog
		if pos+1100 > cfg.MappedFileSizeCommitLog {
			t.Fatalf("end %d too near the end of its file", end)
		}
		// A torn record at the end and a surviving page fragment past a
		// zero gap: 1050 bytes of data to cut.
		writeAt(t, cur, pos, bytes.Repeat([]byte{0xab}, 100))
		writeAt(t, cur, pos+1000, bytes.Repeat([]byte{0xcd}, 50))
		st, logs := reopenLogged(t, cfg)
		defer st.Shutdown()
		if got := st.Stats().TruncatedBytes; got != 1050 {
			t.Fatalf("TruncatedBytes %d, want 1050", got)
		}
		if l := recoveredLine(t, logs); !strings.Contains(l, "truncatedBytes=1050 ") {
			t.Fatalf("recovery line: %s", l)
		}
		data, err := os.ReadFile(cur)
		if err != nil {
			t.Fatal(err)
		}
		if !allZero(data[pos:]) {
			t.Fatalf("cut bytes left in %s", cur)
		}
		if r := mustPut(t, st, testMsg("T", 0, "after", "")); r.WroteOffset != end || r.QueueOffset != 300 {
			t.Fatalf("next put at %d (queue offset %d), want %d (300)", r.WroteOffset, r.QueueOffset, end)
		}
	})

	t.Run("data in the next file", func(t *testing.T) {
		cfg := base
		cfg.StorePathRootDir = t.TempDir()
		cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
		end, cur, next := crashedStore(t, cfg, 300)
		if _, err := os.Stat(next); err != nil {
			t.Fatalf("no prepared next file: %v", err)
		}
		pos := end % cfg.MappedFileSizeCommitLog
		nextFrom := end - pos + cfg.MappedFileSizeCommitLog
		writeAt(t, cur, pos, bytes.Repeat([]byte{0xab}, 10))
		writeAt(t, next, 0, bytes.Repeat([]byte{0xee}, 200))
		st, _ := reopenLogged(t, cfg)
		defer st.Shutdown()
		if got, want := st.Stats().TruncatedBytes, nextFrom+200-end; got != want {
			t.Fatalf("TruncatedBytes %d, want %d", got, want)
		}
		if got := st.commitLog.visible.Load(); got != end {
			t.Fatalf("recovered end %d, want %d", got, end)
		}
	})
}
