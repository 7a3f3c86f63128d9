package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spoolmq/spool/internal/vfs"
)

// EpochFileName is the epoch file under storePathRootDir (RocketMQ's name).
const EpochFileName = "epochFileCheckpoint"

// ErrEpochOrder is wrapped by the error EpochFile.Append returns for an
// entry whose epoch or start offset is not above the last entry's.
var ErrEpochOrder = errors.New("store: epoch entry not above the last one")

// EpochEntry is one line of the epoch file: the master epoch and the
// CommitLog offset its first byte was written at. An epoch's bytes end
// where the next entry starts (the last one: at the log's end).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

func (e EpochEntry) String() string { return fmt.Sprintf("%d-%d", e.Epoch, e.StartOffset) }

// EncodeEpochFile is the epoch file's text, as RocketMQ's CheckpointFile
// writes it:
//
//	2             number of entries
//	1895893516    crc32 (IEEE) of the entry lines, newlines included, & 0x7FFFFFFF
//	1-0           epoch-startOffset, oldest first
//	2-1073741824
func EncodeEpochFile(entries []EpochEntry) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		body.WriteString(e.String())
		body.WriteByte('\n')
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%d\n%d\n", len(entries), crc32.ChecksumIEEE(body.Bytes())&0x7FFFFFFF)
	out.Write(body.Bytes())
	return out.Bytes()
}

// DecodeEpochFile parses the epoch file. A second line holding an entry
// (RocketMQ before the CRC line) is read as an entry; a CRC of 0 is not
// checked, as RocketMQ does.
func DecodeEpochFile(b []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, fmt.Errorf("%w: %s is empty", ErrCorrupt, EpochFileName)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: %s: bad entry count %q", ErrCorrupt, EpochFileName, lines[0])
	}
	rest := lines[1:]
	crc, checkCRC := int64(0), false
	if len(rest) > 0 && !strings.Contains(rest[0], "-") {
		if crc, err = strconv.ParseInt(strings.TrimSpace(rest[0]), 10, 64); err != nil {
			return nil, fmt.Errorf("%w: %s: bad CRC line %q", ErrCorrupt, EpochFileName, rest[0])
		}
		checkCRC = crc != 0
		rest = rest[1:]
	}
	var body bytes.Buffer
	out := make([]EpochEntry, 0, len(rest))
	for _, l := range rest {
		if l == "" {
			continue
		}
		body.WriteString(l)
		body.WriteByte('\n')
		ep, start, ok := strings.Cut(l, "-")
		e, err1 := strconv.ParseInt(ep, 10, 32)
		s, err2 := strconv.ParseInt(start, 10, 64)
		if !ok || err1 != nil || err2 != nil || s < 0 {
			return nil, fmt.Errorf("%w: %s: bad entry %q", ErrCorrupt, EpochFileName, l)
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: s})
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: %s: %d entries announced, %d found", ErrCorrupt, EpochFileName, n, len(out))
	}
	if checkCRC && int64(crc32.ChecksumIEEE(body.Bytes())&0x7FFFFFFF) != crc {
		return nil, fmt.Errorf("%w: %s: CRC mismatch", ErrCorrupt, EpochFileName)
	}
	for i := 1; i < len(out); i++ {
		if out[i].Epoch <= out[i-1].Epoch || out[i].StartOffset < out[i-1].StartOffset {
			return nil, fmt.Errorf("%w: %s: entry %s after %s", ErrCorrupt, EpochFileName, out[i], out[i-1])
		}
	}
	return out, nil
}

// epochEnd is where entry i of es ends: the next entry's start, or end
// for the last one (unbounded when the last entry starts past end, as
// RocketMQ leaves it).
func epochEnd(es []EpochEntry, i int, end int64) int64 {
	if i+1 < len(es) {
		return es[i+1].StartOffset
	}
	if es[i].StartOffset <= end {
		return end
	}
	return math.MaxInt64
}

// ConsistentPoint is RocketMQ's findConsistentPoint: the offset up to
// which a replica's log (epochs local, ending at localEnd) and its new
// master's (master, masterEnd) hold the same bytes. Walking the local
// epochs from the newest, the first one the master has with the same
// start offset gives min(its local end, its master end). ok is false when
// no epoch matches (nothing is known to be common). An empty local table
// is a new replica: the caller starts it from scratch without a cut.
func ConsistentPoint(local []EpochEntry, localEnd int64, master []EpochEntry, masterEnd int64) (offset int64, ok bool) {
	for i := len(local) - 1; i >= 0; i-- {
		j := slices.IndexFunc(master, func(e EpochEntry) bool { return e.Epoch == local[i].Epoch })
		if j < 0 || master[j].StartOffset != local[i].StartOffset {
			continue
		}
		return min(epochEnd(local, i, localEnd), epochEnd(master, j, masterEnd)), true
	}
	return -1, false
}

// EpochFile is the epoch table and its file, storePathRootDir/
// epochFileCheckpoint. Every change is durable before it returns: the
// text is written to a temporary file, synced, renamed over the file and
// the directory synced, so a crash leaves the old or the new table.
type EpochFile struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex
	entries []EpochEntry
}

// OpenEpochFile reads the epoch file under root (an absent file is an
// empty table).
func OpenEpochFile(fs vfs.FS, root string) (*EpochFile, error) {
	if fs == nil {
		fs = vfs.Default
	}
	e := &EpochFile{fs: fs, path: filepath.Join(root, EpochFileName)}
	b, err := vfs.ReadFile(fs, e.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return e, nil
	case err != nil:
		return nil, fmt.Errorf("store: read %s: %w", e.path, err)
	}
	if e.entries, err = DecodeEpochFile(b); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, e.path)
	}
	return e, nil
}

// Path is the file's path.
func (e *EpochFile) Path() string { return e.path }

// Entries returns a copy of the table, oldest first.
func (e *EpochFile) Entries() []EpochEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.entries)
}

// Last returns the newest entry (ok false when the table is empty).
func (e *EpochFile) Last() (EpochEntry, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.entries) == 0 {
		return EpochEntry{}, false
	}
	return e.entries[len(e.entries)-1], true
}

// LastEpoch is the newest epoch, -1 when the table is empty.
func (e *EpochFile) LastEpoch() int32 {
	if l, ok := e.Last(); ok {
		return l.Epoch
	}
	return -1
}

// Append adds an entry whose epoch and start offset are above the last
// entry's and makes it durable.
func (e *EpochFile) Append(n EpochEntry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if k := len(e.entries); k > 0 {
		if l := e.entries[k-1]; l.Epoch >= n.Epoch || l.StartOffset >= n.StartOffset {
			return fmt.Errorf("%w: %s after %s", ErrEpochOrder, n, l)
		}
	}
	return e.writeLocked(append(slices.Clone(e.entries), n))
}

// TruncateSuffixByOffset removes the entries starting at or after offset
// (their bytes were cut) and makes the table durable.
func (e *EpochFile) TruncateSuffixByOffset(offset int64) error {
	return e.truncate(func(x EpochEntry) bool { return x.StartOffset >= offset })
}

// TruncateSuffixByEpoch removes the entries of epoch or later.
func (e *EpochFile) TruncateSuffixByEpoch(epoch int32) error {
	return e.truncate(func(x EpochEntry) bool { return x.Epoch >= epoch })
}

// TrimBeyond removes the entries starting strictly after end (the log
// ends before their first byte: they describe nothing). It is run at
// start-up, after recovery found the log's end.
func (e *EpochFile) TrimBeyond(end int64) error {
	return e.truncate(func(x EpochEntry) bool { return x.StartOffset > end })
}

func (e *EpochFile) truncate(drop func(EpochEntry) bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := slices.DeleteFunc(slices.Clone(e.entries), drop)
	if len(keep) == len(e.entries) {
		return nil
	}
	return e.writeLocked(keep)
}

func (e *EpochFile) writeLocked(next []EpochEntry) error {
	if err := vfs.WriteFileAtomic(e.fs, e.path, EncodeEpochFile(next), nil); err != nil {
		return fmt.Errorf("store: write %s: %w", e.path, err)
	}
	e.entries = next
	return nil
}

// Find returns the entry holding offset in a log ending at end, and where
// that epoch's bytes end (end for the last entry).
func (e *EpochFile) Find(offset, end int64) (EpochEntry, int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.entries {
		if stop := epochEnd(e.entries, i, end); x.StartOffset <= offset && (offset < stop || i == len(e.entries)-1) {
			return x, stop, true
		}
	}
	return EpochEntry{}, 0, false
}
