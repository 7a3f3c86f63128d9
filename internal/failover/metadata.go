package failover

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/vfs"
)

// The broker's identity files under storePathRootDir, RocketMQ's
// storePathBrokerIdentity and its "-temp" sibling.
const (
	IdentityFile     = "brokerIdentity"
	TempIdentityFile = "brokerIdentity-temp"
)

// Identity is the content of brokerIdentity: the controller id this
// broker was given in its broker set. The temp file adds the check code
// the id was applied with.
type Identity struct {
	ClusterName string
	BrokerName  string
	BrokerID    int64
	// CheckCode is registerCheckCode ("addr;millis"), only in the temp
	// file.
	CheckCode string
}

// encode renders id as RocketMQ's BrokerMetadata (temp=false) or
// TempBrokerMetadata (temp=true) string.
func (id Identity) encode(temp bool) (string, error) {
	for _, f := range []string{id.ClusterName, id.BrokerName, id.CheckCode} {
		if strings.Contains(f, "#") {
			return "", fmt.Errorf("broker identity field %q contains '#', the file's separator", f)
		}
	}
	s := id.ClusterName + "#" + id.BrokerName + "#" + strconv.FormatInt(id.BrokerID, 10)
	if temp {
		s += "#" + id.CheckCode
	}
	return s, nil
}

// decodeIdentity parses a file's content; ok is false when it does not
// hold every field (RocketMQ's isLoaded).
func decodeIdentity(s string, temp bool) (Identity, bool) {
	f := strings.Split(strings.TrimRight(s, "\r\n"), "#")
	n := 3
	if temp {
		n = 4
	}
	if len(f) < n {
		return Identity{}, false
	}
	id, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
	if err != nil {
		return Identity{}, false
	}
	out := Identity{ClusterName: f[0], BrokerName: f[1], BrokerID: id}
	if temp {
		out.CheckCode = f[3]
	}
	if out.ClusterName == "" || out.ClusterName == "null" || out.BrokerName == "" || out.BrokerName == "null" ||
		temp && (out.CheckCode == "" || out.CheckCode == "null") {
		return Identity{}, false
	}
	return out, true
}

// IdentityFiles owns the format of brokerIdentity and brokerIdentity-temp
// in one store root. Writes replace the file atomically (temporary file,
// fsync, rename, fsync of the directory).
type IdentityFiles struct {
	FS   vfs.FS
	Root string
}

func (f IdentityFiles) path(temp bool) string {
	if temp {
		return filepath.Join(f.Root, TempIdentityFile)
	}
	return filepath.Join(f.Root, IdentityFile)
}

// Load reads one of the files. ok is false when the file is missing or
// incomplete; err is an I/O error other than a missing file.
func (f IdentityFiles) Load(temp bool) (id Identity, ok bool, err error) {
	file, err := f.FS.OpenFile(f.path(temp), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, err
	}
	defer file.Close()
	size, err := file.Size()
	if err != nil {
		return Identity{}, false, err
	}
	buf := make([]byte, size)
	if _, err := file.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return Identity{}, false, err
	}
	id, ok = decodeIdentity(string(buf), temp)
	return id, ok, nil
}

// Store writes one of the files.
func (f IdentityFiles) Store(id Identity, temp bool) error {
	s, err := id.encode(temp)
	if err != nil {
		return err
	}
	if err := f.FS.MkdirAll(f.Root, 0o755); err != nil {
		return err
	}
	return vfs.WriteFileAtomic(f.FS, f.path(temp), []byte(s), nil)
}

// Remove deletes one of the files (missing is fine).
func (f IdentityFiles) Remove(temp bool) error {
	err := f.FS.Remove(f.path(temp))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = f.FS.SyncDir(f.Root)
	}
	return err
}
