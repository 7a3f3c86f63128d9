package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/spoolmq/spool/internal/vfs"
)

// Layout constants (see the package doc).
const (
	HeaderSize   = 40
	HashSlotSize = 4
	EntrySize    = 20

	offBeginTimestamp = 0
	offEndTimestamp   = 8
	offBeginPhyOffset = 16
	offEndPhyOffset   = 24
	offHashSlotCount  = 32
	offIndexCount     = 36
)

// header is the 40-byte file header.
type header struct {
	beginTimestamp int64
	endTimestamp   int64
	beginPhyOffset int64
	endPhyOffset   int64
	hashSlotCount  int32
	indexCount     int32
}

func (h *header) encode(b []byte) {
	binary.BigEndian.PutUint64(b[offBeginTimestamp:], uint64(h.beginTimestamp))
	binary.BigEndian.PutUint64(b[offEndTimestamp:], uint64(h.endTimestamp))
	binary.BigEndian.PutUint64(b[offBeginPhyOffset:], uint64(h.beginPhyOffset))
	binary.BigEndian.PutUint64(b[offEndPhyOffset:], uint64(h.endPhyOffset))
	binary.BigEndian.PutUint32(b[offHashSlotCount:], uint32(h.hashSlotCount))
	binary.BigEndian.PutUint32(b[offIndexCount:], uint32(h.indexCount))
}

func decodeHeader(b []byte) header {
	return header{
		beginTimestamp: int64(binary.BigEndian.Uint64(b[offBeginTimestamp:])),
		endTimestamp:   int64(binary.BigEndian.Uint64(b[offEndTimestamp:])),
		beginPhyOffset: int64(binary.BigEndian.Uint64(b[offBeginPhyOffset:])),
		endPhyOffset:   int64(binary.BigEndian.Uint64(b[offEndPhyOffset:])),
		hashSlotCount:  int32(binary.BigEndian.Uint32(b[offHashSlotCount:])),
		indexCount:     int32(binary.BigEndian.Uint32(b[offIndexCount:])),
	}
}

// entry is one 20-byte index entry.
type entry struct {
	keyHash   int32
	phyOffset int64
	timeDiff  int32
	prevIndex int32
}

func (e *entry) encode(b []byte) {
	binary.BigEndian.PutUint32(b[0:], uint32(e.keyHash))
	binary.BigEndian.PutUint64(b[4:], uint64(e.phyOffset))
	binary.BigEndian.PutUint32(b[12:], uint32(e.timeDiff))
	binary.BigEndian.PutUint32(b[16:], uint32(e.prevIndex))
}

func decodeEntry(b []byte) entry {
	return entry{
		keyHash:   int32(binary.BigEndian.Uint32(b[0:])),
		phyOffset: int64(binary.BigEndian.Uint64(b[4:])),
		timeDiff:  int32(binary.BigEndian.Uint32(b[12:])),
		prevIndex: int32(binary.BigEndian.Uint32(b[16:])),
	}
}

// FileSize is the size of an index file with the given geometry.
func FileSize(maxHashSlotNum, maxIndexNum int) int64 {
	return HeaderSize + int64(maxHashSlotNum)*HashSlotSize + int64(maxIndexNum)*EntrySize
}

// slotPageSize is the unit in which dirty hash slots are written back
// (1,024 slots).
const slotPageSize = 4096

// indexFile is one open index file. Its header lives in memory; the
// writable (newest) file also keeps its hash slots in memory (slots != nil,
// encoded as on disk) and buffers its changes: entries appended since the
// last write-back (pend, numbered from pendFirst), the slot pages they
// changed (dirty) and the header. writeBackLocked writes them with a few
// large pwrites, entries first, then the slot pages, then the header, so a
// header on disk never counts an entry that is not there. Older files are
// read with pread.
//
// Entries numbered below hdr.indexCount never change while the file is in
// the Service's list (Truncate, which rewrites them, excludes queries);
// those below pendFirst are read from the file without holding mu.
type indexFile struct {
	name     string // base name, yyyyMMddHHmmssSSS
	f        vfs.File
	slotNum  int
	indexNum int

	mu        sync.RWMutex // guards hdr, diskHdr, slots, pend and pendFirst
	hdr       header       // as of the last put
	diskHdr   header       // as last written to the file
	slots     []byte       // writable file only: slotNum big-endian int32
	pend      []byte       // entries not yet written, numbered from pendFirst
	pendFirst int32
	dirty     []uint64 // bit per slot page changed since the last write-back (writer only)
	anyDirty  bool     // writer only
	synced    bool     // nothing written since the last sync
}

func (x *indexFile) slotOffset(slot int) int64 {
	return HeaderSize + int64(slot)*HashSlotSize
}

func (x *indexFile) entryOffset(n int32) int64 {
	return HeaderSize + int64(x.slotNum)*HashSlotSize + int64(n)*EntrySize
}

// openIndexFile reads and checks the header of an existing file. It never
// panics on any content; a file whose size or header is impossible gives
// ErrCorrupt.
func openIndexFile(f vfs.File, name string, slotNum, indexNum int) (*indexFile, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("index: stat %s: %w", name, err)
	}
	if want := FileSize(slotNum, indexNum); size != want {
		return nil, fmt.Errorf("%w: %s is %d bytes, want %d (maxHashSlotNum %d, maxIndexNum %d)",
			ErrCorrupt, name, size, want, slotNum, indexNum)
	}
	var b [HeaderSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return nil, fmt.Errorf("index: read header of %s: %w", name, err)
	}
	h := decodeHeader(b[:])
	if h.indexCount <= 0 {
		h.indexCount = 1 // as RocketMQ: a fresh header reads 0
	}
	switch {
	case int(h.indexCount) > indexNum:
		return nil, fmt.Errorf("%w: %s: indexCount %d above maxIndexNum %d", ErrCorrupt, name, h.indexCount, indexNum)
	case h.hashSlotCount < 0 || int(h.hashSlotCount) > slotNum:
		return nil, fmt.Errorf("%w: %s: hashSlotCount %d outside [0, %d]", ErrCorrupt, name, h.hashSlotCount, slotNum)
	case h.beginPhyOffset < 0 || h.endPhyOffset < h.beginPhyOffset:
		return nil, fmt.Errorf("%w: %s: phy offsets %d..%d", ErrCorrupt, name, h.beginPhyOffset, h.endPhyOffset)
	case h.beginTimestamp < 0 || h.endTimestamp < h.beginTimestamp:
		return nil, fmt.Errorf("%w: %s: timestamps %d..%d", ErrCorrupt, name, h.beginTimestamp, h.endTimestamp)
	}
	return &indexFile{name: name, f: f, slotNum: slotNum, indexNum: indexNum, hdr: h, diskHdr: h,
		pendFirst: h.indexCount, synced: true}, nil
}

// createIndexFile initialises a new file: sized to its full length
// without allocating blocks (sparse: the file takes the disk its slots and
// entries take; it is written with pwrite, so a full disk is an error of
// a write, never a fault), the header carrying the previous file's end
// (as RocketMQ does) written.
func createIndexFile(f vfs.File, name string, slotNum, indexNum int, prevEndPhy, prevEndTs int64) (*indexFile, error) {
	size := FileSize(slotNum, indexNum)
	if err := f.Truncate(size); err != nil {
		return nil, fmt.Errorf("index: size %s: %w", name, err)
	}
	x := &indexFile{name: name, f: f, slotNum: slotNum, indexNum: indexNum,
		hdr: header{indexCount: 1}, slots: make([]byte, slotNum*HashSlotSize), pendFirst: 1}
	if prevEndPhy > 0 {
		x.hdr.beginPhyOffset, x.hdr.endPhyOffset = prevEndPhy, prevEndPhy
	}
	if prevEndTs > 0 {
		x.hdr.beginTimestamp, x.hdr.endTimestamp = prevEndTs, prevEndTs
	}
	if err := x.writeHeader(x.hdr); err != nil {
		return nil, err
	}
	return x, nil
}

// writeHeader writes h to the file and records it as the header on disk.
func (x *indexFile) writeHeader(h header) error {
	var b [HeaderSize]byte
	h.encode(b[:])
	if _, err := x.f.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("index: write header of %s: %w", x.name, err)
	}
	x.mu.Lock()
	x.diskHdr = h
	x.synced = false
	x.mu.Unlock()
	return nil
}

// slot returns hash slot i of a writable file (caller holds mu or is the
// writer).
func (x *indexFile) slot(i int) int32 {
	return int32(binary.BigEndian.Uint32(x.slots[i*HashSlotSize:]))
}

// setSlotLocked sets hash slot i and marks its page for write-back (caller
// holds mu for writing and is the writer).
func (x *indexFile) setSlotLocked(i int, v int32) {
	binary.BigEndian.PutUint32(x.slots[i*HashSlotSize:], uint32(v))
	page := i * HashSlotSize / slotPageSize
	if x.dirty == nil {
		pages := (x.slotNum*HashSlotSize + slotPageSize - 1) / slotPageSize
		x.dirty = make([]uint64, (pages+63)/64)
	}
	x.dirty[page/64] |= 1 << (page % 64)
	x.anyDirty = true
}

// pending reports whether changes wait for writeBackLocked.
func (x *indexFile) pending() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.pend) > 0 || x.anyDirty || x.hdr != x.diskHdr
}

// writeBackLocked writes the buffered entries, the changed slot pages and
// then the header, each as few large pwrites (the caller is the writer:
// it holds the Service's writeMu). On error nothing is dropped from memory.
func (x *indexFile) writeBackLocked() error {
	x.mu.RLock()
	h, pend, first, disk := x.hdr, x.pend, x.pendFirst, x.diskHdr
	x.mu.RUnlock()
	if len(pend) > 0 {
		if _, err := x.f.WriteAt(pend, x.entryOffset(first)); err != nil {
			return fmt.Errorf("index: write entries of %s: %w", x.name, err)
		}
	}
	if x.anyDirty {
		// Runs of dirty pages, bridging gaps of up to two clean pages (a
		// page copy costs less than a system call).
		const bridge = 2
		pages := (len(x.slots) + slotPageSize - 1) / slotPageSize
		for p := 0; p < pages; {
			if x.dirty[p/64] == 0 && p%64 == 0 {
				p += 64
				continue
			}
			if x.dirty[p/64]&(1<<(p%64)) == 0 {
				p++
				continue
			}
			start, end := p, p+1
			for q := end; q < pages && q <= end+bridge; q++ {
				if x.dirty[q/64]&(1<<(q%64)) != 0 {
					end = q + 1
				}
			}
			lo, hi := start*slotPageSize, min(end*slotPageSize, len(x.slots))
			if _, err := x.f.WriteAt(x.slots[lo:hi], x.slotOffset(0)+int64(lo)); err != nil {
				return fmt.Errorf("index: write slots of %s: %w", x.name, err)
			}
			p = end
		}
		clear(x.dirty)
		x.anyDirty = false
	}
	if h != disk {
		if err := x.writeHeader(h); err != nil {
			return err
		}
	}
	if len(pend) > 0 {
		x.mu.Lock()
		// Only the writer appends, so pend is unchanged since the snapshot.
		x.pend = x.pend[:0]
		x.pendFirst = h.indexCount
		x.mu.Unlock()
	}
	return nil
}

// loadSlots reads the hash slot table into memory, making the file
// writable. It reports whether any slot points past indexCount (a put cut
// short by a crash), which calls for a repair.
func (x *indexFile) loadSlots() (inconsistent bool, err error) {
	slots := make([]byte, x.slotNum*HashSlotSize)
	if _, err := x.f.ReadAt(slots, x.slotOffset(0)); err != nil {
		return false, fmt.Errorf("index: read slots of %s: %w", x.name, err)
	}
	for j := 0; j < len(slots); j += HashSlotSize {
		v := int32(binary.BigEndian.Uint32(slots[j:]))
		if v < 0 || v >= x.hdr.indexCount {
			if v != 0 {
				inconsistent = true
			}
			binary.BigEndian.PutUint32(slots[j:], 0)
		}
	}
	x.mu.Lock()
	x.slots = slots
	x.mu.Unlock()
	return inconsistent, nil
}

// full reports whether no entry fits any more.
func (x *indexFile) full() bool { return int(x.hdr.indexCount) >= x.indexNum }

// room is the number of entries that still fit.
func (x *indexFile) room() int { return x.indexNum - int(x.hdr.indexCount) }

// putKeysLocked appends one entry per hash for a record to the file's
// buffers (the caller holds the Service's writeMu, so there is one writer);
// writeBackLocked writes them out. hashes must fit (len(hashes) <= room()).
func (x *indexFile) putKeysLocked(hashes []int32, phyOffset, storeTimestamp int64) {
	h := x.hdr // only the writer changes hdr
	if h.indexCount <= 1 {
		h.beginPhyOffset = phyOffset
		h.beginTimestamp = storeTimestamp
	}
	diff := int64(0)
	if h.beginTimestamp > 0 {
		diff = (storeTimestamp - h.beginTimestamp) / 1000
		diff = max(0, min(diff, math.MaxInt32))
	}
	first := h.indexCount
	x.mu.Lock()
	for i, kh := range hashes {
		slot := int(kh % int32(x.slotNum))
		n := first + int32(i)
		prev := x.slot(slot)
		if prev == 0 {
			h.hashSlotCount++
		}
		e := entry{keyHash: kh, phyOffset: phyOffset, timeDiff: int32(diff), prevIndex: prev}
		var eb [EntrySize]byte
		e.encode(eb[:])
		x.pend = append(x.pend, eb[:]...)
		x.setSlotLocked(slot, n)
	}
	h.indexCount += int32(len(hashes))
	h.endPhyOffset = phyOffset
	h.endTimestamp = storeTimestamp
	x.hdr = h
	x.mu.Unlock()
}

// pendingBytes is the size of the entries waiting for write-back (writer
// only).
func (x *indexFile) pendingBytes() int { return len(x.pend) }

// header returns a copy of the header.
func (x *indexFile) header() header {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.hdr
}

// timeMatched is RocketMQ's IndexFile.isTimeMatched.
func (h header) timeMatched(begin, end int64) bool {
	return (begin < h.beginTimestamp && end > h.endTimestamp) ||
		(begin >= h.beginTimestamp && begin <= h.endTimestamp) ||
		(end >= h.beginTimestamp && end <= h.endTimestamp)
}

// selectPhyOffsets appends to out the phyOffsets of entries with keyHash kh
// stored within [begin, end], newest first, until out holds maxNum. It
// walks one chain; a corrupt chain ends the walk (prevIndex must decrease),
// so it always terminates.
func (x *indexFile) selectPhyOffsets(out []int64, kh int32, maxNum int, begin, end int64) ([]int64, error) {
	x.mu.RLock()
	h := x.hdr
	slot := int(kh % int32(x.slotNum))
	var next int32
	if x.slots != nil {
		next = x.slot(slot)
	}
	mem := x.slots != nil
	x.mu.RUnlock()
	if h.indexCount <= 1 {
		return out, nil
	}
	if !mem {
		var sb [HashSlotSize]byte
		if _, err := x.f.ReadAt(sb[:], x.slotOffset(slot)); err != nil {
			return out, fmt.Errorf("index: read slot of %s: %w", x.name, err)
		}
		next = int32(binary.BigEndian.Uint32(sb[:]))
	}
	var eb [EntrySize]byte
	for next > 0 && next < h.indexCount && len(out) < maxNum {
		if err := x.readEntry(eb[:], next); err != nil {
			return out, err
		}
		e := decodeEntry(eb[:])
		if e.timeDiff < 0 {
			break
		}
		t := h.beginTimestamp + int64(e.timeDiff)*1000
		if e.keyHash == kh && t >= begin && t <= end {
			out = append(out, e.phyOffset)
		}
		if e.prevIndex >= next || t < begin {
			break
		}
		next = e.prevIndex
	}
	return out, nil
}

// readEntry reads entry n into eb, from the write-back buffer when it is
// still there, else from the file.
func (x *indexFile) readEntry(eb []byte, n int32) error {
	x.mu.RLock()
	if len(x.pend) > 0 && n >= x.pendFirst {
		off := int(n-x.pendFirst) * EntrySize
		if off+EntrySize <= len(x.pend) {
			copy(eb, x.pend[off:])
			x.mu.RUnlock()
			return nil
		}
	}
	x.mu.RUnlock()
	if _, err := x.f.ReadAt(eb, x.entryOffset(n)); err != nil {
		return fmt.Errorf("index: read entry %d of %s: %w", n, x.name, err)
	}
	return nil
}

// sync makes what was written durable (fdatasync: the size never changes)
// and returns the header it covers.
func (x *indexFile) sync() (header, error) {
	x.mu.Lock()
	synced := x.synced
	x.synced = true
	h := x.diskHdr
	x.mu.Unlock()
	if synced {
		return h, nil
	}
	if err := x.f.Datasync(); err != nil {
		x.mu.Lock()
		x.synced = false
		x.mu.Unlock()
		return h, fmt.Errorf("index: sync %s: %w", x.name, err)
	}
	return h, nil
}

// repair validates entries 1..indexCount-1 in order and keeps the longest
// prefix of plausible entries below limitPhy (keyHash >= 0, timeDiff >= 0,
// phyOffset non-decreasing, at or above beginPhyOffset, prevIndex below the
// entry's own number). If it stopped at an implausible entry, the entries
// of the last kept phyOffset go too (that record may have lost keys); if it
// stopped at limitPhy they stay (a later record was written after them). It then rebuilds the
// hash slots and prev links of what is kept, rewrites slots and header, and
// leaves the file writable. It returns the number of entries dropped.
func (x *indexFile) repair(limitPhy int64) (int, error) {
	x.mu.RLock()
	h := x.diskHdr // what the file holds: buffered changes that were never written are dropped
	x.mu.RUnlock()
	const chunk = 4096 // entries per read
	buf := make([]byte, chunk*EntrySize)

	// Pass 1: find the valid prefix.
	keep := int32(1)
	lastPhy := int64(-1)
	var lastTimeDiff int32
	prevKeptPhy, lastBoundary := int64(-1), int32(1) // lastBoundary: first entry of the last phyOffset
	cut := false
scan:
	for n := int32(1); n < h.indexCount; {
		cnt := min(int32(chunk), h.indexCount-n)
		b := buf[:int(cnt)*EntrySize]
		if _, err := x.f.ReadAt(b, x.entryOffset(n)); err != nil {
			return 0, fmt.Errorf("index: read entries of %s: %w", x.name, err)
		}
		for i := int32(0); i < cnt; i++ {
			e := decodeEntry(b[int(i)*EntrySize:])
			num := n + i
			if e.keyHash < 0 || e.timeDiff < 0 || e.phyOffset < h.beginPhyOffset || e.phyOffset < lastPhy ||
				e.prevIndex < 0 || e.prevIndex >= num {
				cut = true // implausible: the kept tail record may be incomplete
				break scan
			}
			if e.phyOffset >= limitPhy {
				break scan // a later record follows, so the kept tail is whole
			}
			if e.phyOffset != lastPhy {
				prevKeptPhy = lastPhy
				lastBoundary = num
			}
			lastPhy = e.phyOffset
			lastTimeDiff = e.timeDiff
			keep = num + 1
		}
		n += cnt
	}
	if cut && keep > 1 {
		keep = lastBoundary
		lastPhy = prevKeptPhy
		lastTimeDiff = -1 // recomputed below
	}
	dropped := int(h.indexCount - keep)

	// Pass 2: rebuild slots and prev links for entries 1..keep-1.
	slots := make([]int32, x.slotNum)
	var slotCount int32
	for n := int32(1); n < keep; {
		cnt := min(int32(chunk), keep-n)
		b := buf[:int(cnt)*EntrySize]
		if _, err := x.f.ReadAt(b, x.entryOffset(n)); err != nil {
			return 0, fmt.Errorf("index: read entries of %s: %w", x.name, err)
		}
		changed := false
		for i := int32(0); i < cnt; i++ {
			eb := b[int(i)*EntrySize : int(i+1)*EntrySize]
			e := decodeEntry(eb)
			slot := int(e.keyHash % int32(x.slotNum))
			if slots[slot] == 0 {
				slotCount++
			}
			if e.prevIndex != slots[slot] {
				e.prevIndex = slots[slot]
				e.encode(eb)
				changed = true
			}
			slots[slot] = n + i
			if n+i == keep-1 {
				lastTimeDiff = e.timeDiff
			}
		}
		if changed {
			if _, err := x.f.WriteAt(b, x.entryOffset(n)); err != nil {
				return 0, fmt.Errorf("index: rewrite entries of %s: %w", x.name, err)
			}
		}
		n += cnt
	}
	enc := make([]byte, x.slotNum*HashSlotSize)
	for i, v := range slots {
		binary.BigEndian.PutUint32(enc[i*HashSlotSize:], uint32(v))
	}
	if _, err := x.f.WriteAt(enc, x.slotOffset(0)); err != nil {
		return 0, fmt.Errorf("index: rewrite slots of %s: %w", x.name, err)
	}
	h.indexCount = keep
	h.hashSlotCount = slotCount
	if keep > 1 {
		h.endPhyOffset = lastPhy
		h.endTimestamp = h.beginTimestamp + int64(lastTimeDiff)*1000
	} else {
		h.endPhyOffset = h.beginPhyOffset
		h.endTimestamp = h.beginTimestamp
	}
	x.mu.Lock()
	x.hdr = h
	x.slots = enc
	x.pend = x.pend[:0]
	x.pendFirst = keep
	x.mu.Unlock()
	clear(x.dirty)
	x.anyDirty = false
	return dropped, x.writeHeader(h)
}
