package index

import (
	"errors"
	"os"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/vfs"
)

// An index file of an impossible size matches the one corruption marker.
func TestBadIndexFileMatchesErrCorruption(t *testing.T) {
	fs := vfs.NewMemFS()
	f, err := fs.OpenFile("x", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	_, err = openIndexFile(f, "x", 4, 4)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("openIndexFile of a 10-byte file: %v", err)
	}
}
