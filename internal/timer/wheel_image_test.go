package timer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

func sampleImage() *wheelImage {
	return &wheelImage{slots: 100, cursor: 1_700_000_000, scanFrom: 4096, enqOffset: 7, logEnd: 320, savedAtMs: 5,
		segs: []segImage{{0, 3}}, heads: []slotImage{{index: 4, count: 2, head: 288}, {index: 99, count: 1, head: 0}}}
}

func TestWheelImageRoundTrip(t *testing.T) {
	w := sampleImage()
	got, err := decodeWheelImage(w.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.cursor != w.cursor || got.scanFrom != w.scanFrom || got.enqOffset != w.enqOffset || got.logEnd != w.logEnd ||
		len(got.heads) != 2 || got.heads[1] != w.heads[1] || got.segs[0] != w.segs[0] {
		t.Fatalf("round trip: %+v", got)
	}
	b := w.encode()
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if _, err := decodeWheelImage(c); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
}

// TestCorruptWheelFileRefusesStart: a wheel file that fails its checksum is
// corruption (it is only ever replaced atomically); Start names it.
func TestCorruptWheelFileRefusesStart(t *testing.T) {
	h := newHarness(t, vfs.OS())
	path := filepath.Join(h.root, "timerwheel")
	b := sampleImage().encode()
	b[20] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	svc, err := New(h.config(), h.st)
	if err != nil {
		t.Fatal(err)
	}
	err = svc.Start()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Start: %v", err)
	}
	if _, err := svc.Prepare(timerMsg("a", "TIMER_DELAY_SEC", "3")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Prepare after a failed Start: %v", err)
	}
}

func FuzzDecodeWheelImage(f *testing.F) {
	f.Add(sampleImage().encode())
	f.Add((&wheelImage{slots: 1}).encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWheelImage(b)
		if err != nil {
			return
		}
		if _, err := decodeWheelImage(w.encode()); err != nil {
			t.Fatalf("re-encoded image rejected: %v", err)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	var b [entrySize]byte
	(&logEntry{size: 100, prev: nilPos, phy: 4096, due: 1_700_000_000_000}).encode(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < entrySize {
			return
		}
		e, ok := decodeEntry(in[:entrySize])
		if !ok {
			return
		}
		var out [entrySize]byte
		e.encode(out[:])
		if string(out[:]) != string(in[:entrySize]) {
			t.Fatalf("entry does not round-trip")
		}
	})
}
