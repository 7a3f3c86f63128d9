package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"

	"github.com/spoolmq/spool/internal/vfs"
)

const (
	wheelMagic      = 0x54494D57 // "TIMW"
	wheelVersion    = 1
	wheelHeaderSize = 64
)

// slotImage is one non-empty slot of the wheel.
type slotImage struct {
	index uint32
	count uint32
	head  int64
}

// segImage is the number of live entries of one timer-log file.
type segImage struct {
	start int64
	live  int64
}

// wheelImage is the content of the wheel file: a consistent checkpoint of
// the wheel, the timer log's valid end and the progress of enqueueing and
// delivering.
type wheelImage struct {
	slots     uint32 // wheel size in one-second slots
	cursor    int64  // first second not yet fully delivered
	scanFrom  int64  // CommitLog offset from which recovery looks for delivery markers
	enqOffset int64  // next consume-queue offset of the timer topic to enqueue
	logEnd    int64  // valid, synced end of the timer log
	savedAtMs int64
	segs      []segImage
	heads     []slotImage
}

func (w *wheelImage) encode() []byte {
	b := make([]byte, wheelHeaderSize, wheelHeaderSize+16*len(w.segs)+16*len(w.heads)+4)
	be := binary.BigEndian
	be.PutUint32(b[0:], wheelMagic)
	be.PutUint32(b[4:], wheelVersion)
	be.PutUint32(b[8:], w.slots)
	be.PutUint32(b[12:], 1000)
	be.PutUint64(b[16:], uint64(w.cursor))
	be.PutUint64(b[24:], uint64(w.scanFrom))
	be.PutUint64(b[32:], uint64(w.enqOffset))
	be.PutUint64(b[40:], uint64(w.logEnd))
	be.PutUint32(b[48:], uint32(len(w.segs)))
	be.PutUint32(b[52:], uint32(len(w.heads)))
	be.PutUint64(b[56:], uint64(w.savedAtMs))
	for _, s := range w.segs {
		b = be.AppendUint64(b, uint64(s.start))
		b = be.AppendUint64(b, uint64(s.live))
	}
	for _, s := range w.heads {
		b = be.AppendUint32(b, s.index)
		b = be.AppendUint32(b, s.count)
		b = be.AppendUint64(b, uint64(s.head))
	}
	return be.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func decodeWheelImage(b []byte) (*wheelImage, error) {
	be := binary.BigEndian
	if len(b) < wheelHeaderSize+4 {
		return nil, fmt.Errorf("%d bytes, shorter than the header", len(b))
	}
	if crc := crc32.ChecksumIEEE(b[:len(b)-4]); crc != be.Uint32(b[len(b)-4:]) {
		return nil, errors.New("checksum mismatch")
	}
	if m, v := be.Uint32(b), be.Uint32(b[4:]); m != wheelMagic || v != wheelVersion {
		return nil, fmt.Errorf("magic %#x version %d (want %#x version %d)", m, v, wheelMagic, wheelVersion)
	}
	w := &wheelImage{
		slots: be.Uint32(b[8:]), cursor: int64(be.Uint64(b[16:])), scanFrom: int64(be.Uint64(b[24:])),
		enqOffset: int64(be.Uint64(b[32:])), logEnd: int64(be.Uint64(b[40:])), savedAtMs: int64(be.Uint64(b[56:])),
	}
	nseg, nslot := int(be.Uint32(b[48:])), int(be.Uint32(b[52:]))
	if w.slots == 0 || wheelHeaderSize+16*nseg+16*nslot+4 != len(b) {
		return nil, fmt.Errorf("%d slots, %d files and %d non-empty slots do not fit %d bytes", w.slots, nseg, nslot, len(b))
	}
	p := wheelHeaderSize
	for range nseg {
		w.segs = append(w.segs, segImage{start: int64(be.Uint64(b[p:])), live: int64(be.Uint64(b[p+8:]))})
		p += 16
	}
	for range nslot {
		s := slotImage{index: be.Uint32(b[p:]), count: be.Uint32(b[p+4:]), head: int64(be.Uint64(b[p+8:]))}
		if s.index >= w.slots || s.head < 0 || s.head >= w.logEnd || s.head%entrySize != 0 {
			return nil, fmt.Errorf("slot %d head %d outside the timer log (end %d)", s.index, s.head, w.logEnd)
		}
		w.heads = append(w.heads, s)
		p += 16
	}
	sort.Slice(w.segs, func(i, j int) bool { return w.segs[i].start < w.segs[j].start })
	return w, nil
}

// loadWheelImage reads path; it returns nil, nil when the file does not
// exist.
func loadWheelImage(fs vfs.FS, path string) (*wheelImage, error) {
	b, err := vfs.ReadFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("timer: read %s: %w", path, err)
	}
	w, err := decodeWheelImage(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return w, nil
}

// saveWheelImage replaces path atomically: temp file, fsync, rename, fsync
// of the directory.
func saveWheelImage(fs vfs.FS, path string, b []byte) error {
	if err := vfs.WriteFileAtomic(fs, path, b, nil); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	return nil
}
