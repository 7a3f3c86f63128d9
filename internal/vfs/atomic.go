package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content, never a mix: write a temporary file, fsync it,
// rename it over path, fsync the directory (design rule 5). Call it off the
// hot path; every step may block on the disk. failpoint, when not nil, is
// called after the write ("written") and after the rename ("renamed").
func WriteFileAtomic(fs FS, path string, data []byte, failpoint func(stage string)) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		fs.Remove(tmp) // give back what a partial write took (a full disk)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if failpoint != nil {
		failpoint("written")
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if failpoint != nil {
		failpoint("renamed")
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sync dir of %s: %w", path, err)
	}
	return nil
}

// ReadFile returns the whole content of name on fs.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}
