package timer

import (
	"errors"
	"os"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/vfs"
)

// A wheel file with a bad checksum matches the one corruption marker.
func TestBadWheelFileMatchesErrCorruption(t *testing.T) {
	fs := vfs.NewMemFS()
	f, err := fs.OpenFile("wheel", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 200), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = loadWheelImage(fs, "wheel")
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("loadWheelImage of zeroes: %v", err)
	}
	if errors.Is(ErrClosed, corrupt.ErrCorruption) {
		t.Fatal("ErrClosed matches corrupt.ErrCorruption")
	}
}
