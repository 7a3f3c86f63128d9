package transaction

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/metadata"
)

// A metadata file that does not decode matches both ErrMetadata and the
// one corruption marker.
func TestBadMetadataFileMatchesErrCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transactionIndex.json")
	if err := os.WriteFile(path, []byte(`{"pending":`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadIndex(path)
	if !errors.Is(err, metadata.ErrMetadata) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("truncated transaction index file: %v", err)
	}
}
