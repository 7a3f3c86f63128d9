package message

import (
	"bytes"
	"compress/zlib"
	"errors"
	"testing"
)

func deflate(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 5)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestInflatedSize(t *testing.T) {
	big := bytes.Repeat([]byte("spool "), 5<<20/6) // ~5 MiB, very compressible
	z := deflate(t, big)
	if len(z) > 64<<10 {
		t.Fatalf("compressed to %d bytes", len(z))
	}
	n, err := InflatedSize(z, -1)
	if err != nil || n != len(big) {
		t.Fatalf("no limit: %d %v", n, err)
	}
	n, err = InflatedSize(z, 4<<20)
	if !errors.Is(err, ErrInflatedTooLarge) || n != 4<<20+1 {
		t.Fatalf("limit: %d %v", n, err)
	}
	n, err = InflatedSize(z, len(big))
	if err != nil || n != len(big) {
		t.Fatalf("exact limit: %d %v", n, err)
	}
	small := deflate(t, []byte("hello"))
	if n, err := InflatedSize(small, 100); err != nil || n != 5 {
		t.Fatalf("small: %d %v", n, err)
	}
	if _, err := InflatedSize([]byte("not zlib"), 100); !errors.Is(err, ErrBadCompressed) {
		t.Fatalf("garbage: %v", err)
	}
	if _, err := InflatedSize(z[:len(z)/2], -1); !errors.Is(err, ErrBadCompressed) {
		t.Fatalf("truncated: %v", err)
	}
	// The pooled reader still works after errors.
	if n, err := InflatedSize(small, 100); err != nil || n != 5 {
		t.Fatalf("after errors: %d %v", n, err)
	}
}
