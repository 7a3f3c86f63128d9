package namesrv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolmq/spool/internal/corrupt"
)

// A malformed KV-config file matches the one corruption marker.
func TestBadKVFileMatchesErrCorruption(t *testing.T) {
	cfg := testConfig(t)
	os.MkdirAll(filepath.Dir(cfg.KVConfigPath), 0o755)
	if err := os.WriteFile(cfg.KVConfigPath, []byte(`{"configTable":`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(cfg, nil)
	if !errors.Is(err, ErrBadKVConfigFile) || !errors.Is(err, corrupt.ErrCorruption) {
		t.Fatalf("malformed kv file: %v", err)
	}
}
