package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/spoolmq/spool/internal/vfs"
)

// checkpointSize is the size of the checkpoint file (one page, as
// RocketMQ's).
const checkpointSize = 4096

// Checkpoint is the content of storePathRootDir/checkpoint. The first five
// fields sit where RocketMQ's StoreCheckpoint keeps them:
//
//	 0 physicMsgTimestamp      8  store time of the last flushed CommitLog record
//	 8 logicsMsgTimestamp      8  time the consume queues were last flushed
//	16 indexMsgTimestamp       8  time the index was last flushed
//	24 masterFlushedOffset     8  (replication, unused: 0)
//	32 confirmPhyOffset        8  (replication, unused: 0)
//	40 physicFlushedOffset     8  CommitLog bytes known durable
//	48 logicsDispatchedOffset  8  CommitLog offset up to which every consume
//	                              queue entry is durable
//	56 indexOffset             8  CommitLog offset the index covers
//	64 crc32 (IEEE) of [0,64)  4
//	68 zero padding up to 4096
type Checkpoint struct {
	PhysicMsgTimestamp     int64
	LogicsMsgTimestamp     int64
	IndexMsgTimestamp      int64
	MasterFlushedOffset    int64
	ConfirmPhyOffset       int64
	PhysicFlushedOffset    int64
	LogicsDispatchedOffset int64
	IndexOffset            int64
}

func (cp *Checkpoint) encode() []byte {
	b := make([]byte, checkpointSize)
	for i, v := range []int64{cp.PhysicMsgTimestamp, cp.LogicsMsgTimestamp, cp.IndexMsgTimestamp, cp.MasterFlushedOffset,
		cp.ConfirmPhyOffset, cp.PhysicFlushedOffset, cp.LogicsDispatchedOffset, cp.IndexOffset} {
		binary.BigEndian.PutUint64(b[i*8:], uint64(v))
	}
	binary.BigEndian.PutUint32(b[64:], crc32.ChecksumIEEE(b[:64]))
	return b
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) < 68 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint is %d bytes", ErrCorrupt, len(b))
	}
	if got, want := crc32.ChecksumIEEE(b[:64]), binary.BigEndian.Uint32(b[64:]); got != want {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint CRC %#x, stored %#x", ErrCorrupt, got, want)
	}
	v := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i*8:])) }
	return Checkpoint{v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7)}, nil
}

// readCheckpoint reads the checkpoint; a missing file is a zero
// checkpoint.
func readCheckpoint(fs vfs.FS, path string) (Checkpoint, bool, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	b := make([]byte, checkpointSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return Checkpoint{}, false, fmt.Errorf("store: read %s: %w", path, err)
	}
	cp, err := decodeCheckpoint(b[:n])
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return cp, true, nil
}

// writeCheckpoint replaces the checkpoint atomically: temp file, fsync,
// rename, fsync of the directory (design rule 5). failpoint, when set, is
// called between the steps with their names.
//
// A write that finds no space (ENOSPC on the temporary file) wraps
// errCheckpointNoSpace. With inPlace set (shutdown) it then overwrites the
// existing checkpoint in place and syncs it: that needs no new blocks, so
// a store can stop cleanly on a full disk.
func writeCheckpoint(fs vfs.FS, path string, cp Checkpoint, failpoint func(string), inPlace bool) error {
	var hook func(string)
	if failpoint != nil {
		hook = func(stage string) { failpoint("checkpoint-" + stage) }
	}
	b := cp.encode()
	err := vfs.WriteFileAtomic(fs, path, b, hook)
	if err == nil {
		return nil
	}
	if !isNoSpace(err) {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	if inPlace {
		if err2 := overwriteCheckpoint(fs, path, b); err2 == nil {
			return nil
		} else {
			err = errors.Join(err, err2)
		}
	}
	return fmt.Errorf("store: checkpoint: %w: %w", errCheckpointNoSpace, err)
}

// errCheckpointNoSpace marks a checkpoint that could not be written for
// want of space: retried, not a reason to stop writing.
var errCheckpointNoSpace = errors.New("no space for the checkpoint")

// overwriteCheckpoint writes b over an existing full-size checkpoint file.
func overwriteCheckpoint(fs vfs.FS, path string, b []byte) error {
	st, err := fs.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() != int64(len(b)) {
		return fmt.Errorf("%s is %d bytes, not %d: cannot be overwritten in place", path, st.Size(), len(b))
	}
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return fmt.Errorf("overwrite %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}
