package store

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
)

func parseEntries(t *testing.T, s string) []EpochEntry {
	t.Helper()
	if s == "-" {
		return nil
	}
	var out []EpochEntry
	for _, f := range strings.Fields(s) {
		ep, st, _ := strings.Cut(f, "-")
		e, err1 := strconv.Atoi(ep)
		o, err2 := strconv.ParseInt(st, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad entry %q", f)
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out
}

func TestConsistentPointTable(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "consistent_point.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := strings.Split(line, "|")
		if len(p) != 6 {
			t.Fatalf("bad line %q", line)
		}
		for i := range p {
			p[i] = strings.TrimSpace(p[i])
		}
		localEnd, _ := strconv.ParseInt(p[2], 10, 64)
		masterEnd, _ := strconv.ParseInt(p[4], 10, 64)
		got, ok := ConsistentPoint(parseEntries(t, p[1]), localEnd, parseEntries(t, p[3]), masterEnd)
		if p[5] == "none" {
			if ok {
				t.Errorf("%s: got %d, want none", p[0], got)
			}
		} else if want, _ := strconv.ParseInt(p[5], 10, 64); !ok || got != want {
			t.Errorf("%s: got %d (ok %v), want %d", p[0], got, ok, want)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d cases read", n)
	}
}

func TestEpochFileFormat(t *testing.T) {
	es := []EpochEntry{{1, 0}, {2, 1073741824}}
	b := EncodeEpochFile(es)
	if !strings.HasPrefix(string(b), "2\n") || !strings.HasSuffix(string(b), "\n1-0\n2-1073741824\n") {
		t.Fatalf("text %q", b)
	}
	got, err := DecodeEpochFile(b)
	if err != nil || len(got) != 2 || got[1] != es[1] {
		t.Fatalf("decode: %v %v", got, err)
	}
	// RocketMQ before the CRC line, and a CRC of 0 (unchecked).
	for _, s := range []string{"2\n1-0\n2-1073741824\n", "2\n0\n1-0\n2-1073741824\n"} {
		if got, err := DecodeEpochFile([]byte(s)); err != nil || len(got) != 2 {
			t.Fatalf("%q: %v %v", s, got, err)
		}
	}
	bad := strings.Replace(string(b), "2-1073741824", "2-1073741825", 1)
	if _, err := DecodeEpochFile([]byte(bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("changed entry accepted: %v", err)
	}
	if _, err := DecodeEpochFile([]byte("3\n0\n1-0\n2-5\n")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short file accepted: %v", err)
	}
}

func TestEpochFileDurable(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.NewFaultFS(vfs.OS())
	e, err := OpenEpochFile(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Append(EpochEntry{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := e.Append(EpochEntry{2, 500}); err != nil {
		t.Fatal(err)
	}
	if err := e.Append(EpochEntry{2, 600}); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("same epoch appended: %v", err)
	}
	if err := e.Append(EpochEntry{3, 500}); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("same start appended: %v", err)
	}
	if err := fs.Crash(dir, vfs.CrashOptions{}); err != nil {
		t.Fatal(err)
	}
	e2, err := OpenEpochFile(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := e2.Entries(); len(got) != 2 || got[1] != (EpochEntry{2, 500}) {
		t.Fatalf("after a crash: %v", got)
	}
	if err := e2.TruncateSuffixByOffset(500); err != nil {
		t.Fatal(err)
	}
	if x, end, ok := e2.Find(300, 400); !ok || x.Epoch != 1 || end != 400 {
		t.Fatalf("find: %v %d %v", x, end, ok)
	}
	e3, _ := OpenEpochFile(vfs.OS(), dir)
	if got := e3.Entries(); len(got) != 1 {
		t.Fatalf("after truncation: %v", got)
	}
}

// FuzzDecodeEpochFile: decoding never panics, and an accepted table
// re-encodes to a file that decodes to the same table.
func FuzzDecodeEpochFile(f *testing.F) {
	f.Add(EncodeEpochFile([]EpochEntry{{1, 0}, {2, 1073741824}}))
	f.Add([]byte("2\n1-0\n2-1073741824\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("1\n5\n3-\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeEpochFile(b)
		if err != nil {
			return
		}
		again, err := DecodeEpochFile(EncodeEpochFile(es))
		if err != nil || len(again) != len(es) {
			t.Fatalf("round trip of %v: %v %v", es, again, err)
		}
		for i := range es {
			if again[i] != es[i] || (i > 0 && es[i].Epoch <= es[i-1].Epoch) {
				t.Fatalf("round trip of %v: %v", es, again)
			}
		}
	})
}
