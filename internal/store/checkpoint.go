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
func writeCheckpoint(fs vfs.FS, path string, cp Checkpoint, failpoint func(string)) error {
	var hook func(string)
	if failpoint != nil {
		hook = func(stage string) { failpoint("checkpoint-" + stage) }
	}
	if err := vfs.WriteFileAtomic(fs, path, cp.encode(), hook); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}
