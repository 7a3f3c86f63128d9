package schedule

import (
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// TestDelayOffsetMark: delayOffset.json's CommitLog mark is the log's end,
// lowered to the start of a delivery in flight, and left as loaded while
// the recovery scan has not finished.
func TestDelayOffsetMark(t *testing.T) {
	const end = 4096
	st := endStore{end: end}
	mark := func(s *Service) int64 {
		t.Helper()
		b, err := s.encode()
		if err != nil {
			t.Fatal(err)
		}
		var doc DelayOffsetFile
		if err := json.Unmarshal(b, &doc); err != nil || doc.CommitLogOffset == nil {
			t.Fatalf("%s: %v", b, err)
		}
		return *doc.CommitLogOffset
	}
	s := NewService(Deps{
		Store:       func() store.MessageStore { return st },
		DelayLevels: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second},
		Path:        filepath.Join(t.TempDir(), "delayOffset.json"),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	s.validUpTo = 7
	if m := mark(s); m != 7 {
		t.Fatalf("before recovery: mark %d, want the loaded 7", m)
	}
	s.recoveredAll = true
	if m := mark(s); m != end {
		t.Fatalf("mark %d, want the CommitLog end %d", m, end)
	}
	s.inflight[3] = end - 10
	if m := mark(s); m != end-10 {
		t.Fatalf("mark %d with a delivery in flight from %d", m, end-10)
	}
}

// endStore is a store whose CommitLog ends at end; the mark reads nothing
// else of it.
type endStore struct {
	store.MessageStore
	end int64
}

func (s endStore) MaxPhyOffset() int64 { return s.end }

// After a replica cuts its log (controller mode), no level's progress
// points past its queue's new end.
func TestDelayOffsetsClampToQueueEnds(t *testing.T) {
	s := NewService(Deps{
		Store:       func() store.MessageStore { return endStore{} },
		DelayLevels: []time.Duration{time.Second, 2 * time.Second},
		Path:        filepath.Join(t.TempDir(), "delayOffset.json"),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	s.offsets[1], s.offsets[2] = 40, 3
	ends := map[int32]int64{0: 25, 1: 25}
	if !s.ClampTo(func(q int32) int64 { return ends[q] }) {
		t.Fatal("nothing lowered")
	}
	if s.Offset(1) != 25 || s.Offset(2) != 3 {
		t.Fatalf("offsets %d %d, want 25 3", s.Offset(1), s.Offset(2))
	}
	if s.ClampTo(func(q int32) int64 { return ends[q] }) {
		t.Fatal("lowered again")
	}
}

// A stopped service's progress is valid up to where it stopped, lowered
// by a truncation, so that the next start scans what another master
// delivered meanwhile; Stop and Start can be repeated.
func TestStopMarkAndTruncated(t *testing.T) {
	st := &endStore{end: 4096}
	s := NewService(Deps{
		Store:       func() store.MessageStore { return st },
		DelayLevels: []time.Duration{time.Second},
		Path:        filepath.Join(t.TempDir(), "delayOffset.json"),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	s.Stop() // not started: nothing happens
	s.recoveredAll, s.running, s.quit = true, true, make(chan struct{})
	s.inflight[1] = 4000
	s.Stop()
	st.end = 9000 // the log grows while stopped (a slave)
	s.mu.Lock()
	mark, rec := s.validUpTo, s.recoveredAll
	s.mu.Unlock()
	if mark != 4000 || rec {
		t.Fatalf("after Stop: mark %d recovered %v, want 4000 false", mark, rec)
	}
	if b, _ := s.encode(); !json.Valid(b) || string(b) == "" {
		t.Fatalf("encode %s", b)
	}
	s.Truncated(5000)
	if s.validUpTo != 4000 {
		t.Fatalf("a cut past the mark moved it to %d", s.validUpTo)
	}
	s.Truncated(3000)
	if s.validUpTo != 3000 {
		t.Fatalf("mark %d after a cut at 3000", s.validUpTo)
	}
	s.Stop() // stopped already: nothing happens
	if s.validUpTo != 3000 {
		t.Fatalf("mark %d after a second Stop", s.validUpTo)
	}
}
