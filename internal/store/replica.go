package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/message"
)

// ErrReplicaOffset is wrapped by the error AppendReplicated returns when
// the bytes do not start at the log's end.
var ErrReplicaOffset = errors.New("store: replicated bytes do not start at the CommitLog end")

// ReplicaLog is the CommitLog as replication sees it (internal/ha's Log):
// raw committed bytes for a master to send, and the appending of a
// master's bytes on a slave. Create one per store, after Start.
//
// On a slave the bytes are written at exactly the log's end, into the
// same files the master has (a transfer never crosses a file; the file
// after a full one is taken from the allocator, or while it is still
// being created the bytes go into the write spill, as a put's do, and
// AckOffset stops at the spill). The readable end (what the dispatcher,
// the flusher and readers see) advances only to the end of the last
// complete record, so a record cut by a transfer is waited for rather
// than dispatched, flushed as the end of the log or refused by recovery:
// after a crash the slave restarts at its last valid record and its
// master resends from there. Local puts must not run on a slave (the
// broker refuses them); the transient pool is not supported on a slave.
type ReplicaLog struct {
	st *DefaultMessageStore

	mu     sync.Mutex   // serialises AppendReplicated
	end    atomic.Int64 // end of the appended bytes; -1 before the first append
	recAt  int64        // start of the first record not yet complete
	carry  []byte       // bytes [recAt, end) already written
	inited bool
}

// NewReplicaLog returns the replication view of st.
func NewReplicaLog(st *DefaultMessageStore) *ReplicaLog {
	r := &ReplicaLog{st: st}
	r.end.Store(-1)
	return r
}

// MaxOffset is the end of the log: the readable end, or on a slave the
// end of the appended bytes (which may end inside a record).
func (r *ReplicaLog) MaxOffset() int64 {
	return max(r.st.commitLog.visible.Load(), r.end.Load())
}

// MinOffset is the first offset kept.
func (r *ReplicaLog) MinOffset() int64 { return r.st.commitLog.minOffset() }

// ReadAt copies readable CommitLog bytes from offset into dst, never past
// the readable end or the end of the file holding offset, and returns how
// many. It takes only the file queue's read lock for the lookup (no lock
// a flush, a checkpoint or a metadata write holds) and never waits for a
// sync; old bytes are read with pread, the hot tail from the mapping.
func (r *ReplicaLog) ReadAt(dst []byte, offset int64) (int, error) {
	c := r.st.commitLog
	vis := c.visible.Load()
	if offset >= vis || len(dst) == 0 {
		return 0, nil
	}
	mf := c.mfq.find(offset)
	if mf == nil {
		return 0, fmt.Errorf("%w: %d is not in a CommitLog file (min %d)", ErrOffsetNotFound, offset, c.minOffset())
	}
	fileEnd := mf.from + mf.size
	mf.release()
	n := min(int64(len(dst)), vis-offset, fileEnd-offset)
	if _, err := c.read(dst[:0], offset, int(n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func (r *ReplicaLog) initLocked() {
	if r.inited {
		return
	}
	r.inited = true
	vis := r.st.commitLog.visible.Load()
	r.recAt = vis
	r.end.Store(vis)
}

// AppendReplicated appends b, the master's bytes at offset, at the log's
// end. The bytes are checked record by record (magic, size, file end)
// before they are written; a transfer that does not start at the end, a
// stream that is not CommitLog records, or a write that fails (a full
// disk) returns an error and writes nothing that becomes readable.
func (r *ReplicaLog) AppendReplicated(offset int64, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	c := st.commitLog
	r.initLocked()
	end := r.end.Load()
	if offset != end {
		switch {
		case end == 0 && len(b) == 0:
			return nil // a heartbeat before the first bytes of a new slave
		case end == 0 && offset > 0 && offset%st.cfg.MappedFileSizeCommitLog == 0 && r.emptyLocked():
			// A new slave of a master whose first files are gone: the log
			// begins at the master's first file.
			if err := r.restartAtLocked(offset); err != nil {
				return err
			}
			end = offset
		default:
			return fmt.Errorf("%w: the transfer is at %d, the CommitLog ends at %d", ErrReplicaOffset, offset, end)
		}
	}
	if len(b) == 0 {
		return nil
	}
	if c.committer != nil {
		return errors.New("store: a slave cannot append replicated bytes with transientStorePoolEnable=true")
	}
	if p := st.readOnly.Load(); p != nil {
		return fmt.Errorf("store: read-only: %s", *p)
	}
	if sp := c.spilling.Load(); sp != nil && end+int64(len(b)) > sp.from+int64(len(sp.spill)) {
		// The bytes do not fit the write spill (it is full, or its file
		// is full and the next one begins): unlike a put, which is
		// answered busy, they wait for the spill's file (counted).
		st.stats.putWaitedOnCreate.Add(1)
		if err := c.alloc.adoptNow(sp); err != nil {
			return fmt.Errorf("store: create the CommitLog file at %d for the write spill: %w", sp.from, err)
		}
	}
	var mf *MappedFile
	var recAt int64
	for {
		var err error
		if mf, err = r.fileAt(end); err != nil {
			return err
		}
		pos := end - mf.from
		if pos+int64(len(b)) > mf.size {
			return fmt.Errorf("store: replicated bytes [%d, %d) cross the end of %s", offset, offset+int64(len(b)), mf.path)
		}
		if recAt, err = r.scan(mf, b); err != nil {
			return err
		}
		if mf.spill == nil {
			if err := mf.writeAt(b, pos); err != nil {
				return fmt.Errorf("store: write replicated bytes into %s at %d: %w", mf.path, pos, err)
			}
		}
		c.lock.Lock()
		if mf.spill != nil {
			if c.cur != mf {
				// The spill was copied into its file meanwhile: write there.
				c.lock.Unlock()
				continue
			}
			// Under the put lock, as a put's: the allocator copies the
			// spill's last bytes into the file under it.
			copy(mf.spill[pos:], b)
			st.stats.spillWrites.Add(1)
		}
		mf.wrote.Store(pos + int64(len(b)))
		if (pos+int64(len(b)))>>prefaultShift != pos>>prefaultShift {
			c.alloc.kickPrefault()
		}
		if !c.halfKicked && pos+int64(len(b)) >= mf.size/2 {
			c.halfKicked = true
			c.alloc.kick()
		}
		if mf.spill != nil && recAt > r.recAt {
			// Readable from the spill; advanced under the put lock so the
			// adoption carries the position into the file.
			c.pubMu.Lock()
			if len(c.pending) == 0 {
				c.advance(mf, recAt-mf.from)
			}
			c.pubMu.Unlock()
		}
		c.lock.Unlock()
		break
	}
	newEnd := end + int64(len(b))
	r.end.Store(newEnd)
	// Keep the bytes of the incomplete record for the next scan.
	if recAt >= newEnd {
		r.carry = r.carry[:0]
	} else if recAt >= end {
		r.carry = append(r.carry[:0], b[recAt-end:]...)
	} else {
		r.carry = append(r.carry, b...)
	}
	if recAt > r.recAt {
		r.recAt = recAt
		if mf.spill == nil {
			c.pubMu.Lock()
			if len(c.pending) == 0 {
				c.advance(mf, recAt-mf.from)
			}
			c.pubMu.Unlock()
		}
		c.kickDispatch()
	}
	return nil
}

// AckOffset is what a slave acknowledges to its master: the end of the
// appended bytes that are in a CommitLog file. Bytes still only in the
// write spill (process memory, which a kill -9 loses) count once the
// spill is in its file, as a master's put in the spill is answered only
// then. It never moves backwards.
func (r *ReplicaLog) AckOffset() int64 {
	end := r.MaxOffset() // before the spill: a spill begun after this read starts at or past end
	if sp := r.st.commitLog.spilling.Load(); sp != nil {
		return min(end, sp.from)
	}
	return end
}

// emptyLocked reports whether nothing was ever written to the log.
func (r *ReplicaLog) emptyLocked() bool {
	c := r.st.commitLog
	if c.visible.Load() != 0 || c.minOffset() != 0 {
		return false
	}
	for _, mf := range c.mfq.snapshot() {
		if mf.wrote.Load() != 0 {
			return false
		}
	}
	return true
}

// restartAtLocked drops the empty files of a log that has never been
// written and makes it begin at from, a file boundary.
func (r *ReplicaLog) restartAtLocked(from int64) error {
	st := r.st
	c := st.commitLog
	c.alloc.createMu.Lock() // no file is being made ahead meanwhile
	defer c.alloc.createMu.Unlock()
	c.lock.Lock()
	defer c.lock.Unlock()
	for _, mf := range c.mfq.snapshot() {
		c.mfq.removeFirst(mf)
		mf.destroy(true, 0, 0)
	}
	if err := st.fs.SyncDir(c.mfq.dir); err != nil {
		return fmt.Errorf("store: sync %s: %w", c.mfq.dir, err)
	}
	c.cur = nil
	c.alloc.setNext(from)
	c.flushedWhere.Store(from)
	st.disp.reputFrom.Store(from)
	c.visible.Store(from)
	r.recAt = from
	r.carry = r.carry[:0]
	r.end.Store(from)
	st.logger.Info("store: replication starts this empty CommitLog at the master's first file", "offset", from)
	return nil
}

// fileAt returns the file the log's end is in, rolling to the next file
// when the current one is full.
func (r *ReplicaLog) fileAt(end int64) (*MappedFile, error) {
	c := r.st.commitLog
	c.lock.Lock()
	defer c.lock.Unlock()
	mf := c.cur
	if mf != nil && mf.wrote.Load() < mf.size {
		if mf.from+mf.wrote.Load() != end {
			return nil, fmt.Errorf("store: the current CommitLog file %s is written to %d, replication is at %d (a local put on a slave?)", mf.path, mf.from+mf.wrote.Load(), end)
		}
		return mf, nil
	}
	if mf == nil && end == 0 {
		if last := c.mfq.last(); last != nil && last.from == 0 && last.wrote.Load() == 0 {
			c.cur = last
			return last, nil
		}
	}
	nextFrom := int64(0)
	if mf != nil {
		nextFrom = mf.from + mf.size
	} else if last := c.mfq.last(); last != nil {
		nextFrom = last.from + last.size
	} else {
		nextFrom = end // restartAtLocked emptied the queue at a file boundary
	}
	if nextFrom != end {
		return nil, fmt.Errorf("%w: the next CommitLog file starts at %d, the transfer at %d", ErrReplicaOffset, nextFrom, end)
	}
	next := c.alloc.take(nextFrom)
	if next == nil {
		// As a put's roll: into the write spill, or when the last
		// creation failed (a full disk) or no spill buffer is ready, wait
		// for the creation (counted). AppendReplicated saw to it that no
		// spill is in use.
		var err error
		if c.alloc.failing.Load() {
			r.st.stats.putWaitedOnCreate.Add(1)
			next, err = c.alloc.takeOrCreate(nextFrom)
		} else {
			next, err = c.alloc.spillOrWait(nextFrom)
		}
		if err != nil {
			return nil, fmt.Errorf("store: create the CommitLog file at %d for replicated bytes: %w", nextFrom, err)
		}
	}
	if err := c.mfq.appendFile(next); err != nil {
		next.destroy(true, 0, 0)
		return nil, err
	}
	c.cur = next
	c.halfKicked = false
	c.alloc.kick()
	return next, nil
}

// scan walks the records from recAt through the carried bytes and b (the
// bytes at the current end, in mf) and returns the start of the first
// record still incomplete. Bytes that are not records are an error.
func (r *ReplicaLog) scan(mf *MappedFile, b []byte) (int64, error) {
	end := r.end.Load()
	newEnd := end + int64(len(b))
	fileEnd := mf.from + mf.size
	at := r.recAt
	if at < mf.from { // the previous file ended with a complete blank
		at = mf.from
	}
	byteAt := func(off int64) byte {
		if off < end {
			return r.carry[off-r.recAt]
		}
		return b[off-end]
	}
	var hdr [blankSize]byte
	for at+blankSize <= newEnd {
		for i := range hdr {
			hdr[i] = byteAt(at + int64(i))
		}
		size := int64(int32(binary.BigEndian.Uint32(hdr[:])))
		magic := int32(binary.BigEndian.Uint32(hdr[4:]))
		switch {
		case magic == message.BlankMagicCode && size == fileEnd-at:
			// The rest of the file is the end-of-file marker: readable
			// once all of it is here, so the readable end never passes
			// the appended end.
			if newEnd == fileEnd {
				return fileEnd, nil
			}
			return at, nil
		case magic != message.MagicCodeV1 && magic != message.MagicCodeV2:
			return 0, fmt.Errorf("%w: replicated bytes at CommitLog offset %d are not a record (magic %#08x)", ErrCorrupt, at, uint32(magic))
		case size < message.MinRecordSize || at+size+blankSize > fileEnd:
			return 0, fmt.Errorf("%w: replicated record at CommitLog offset %d has size %d with %d bytes left in the file", ErrCorrupt, at, size, fileEnd-at)
		}
		if at+size > newEnd {
			break
		}
		at += size
	}
	return at, nil
}

// Truncate cuts the log at offset (TruncateTo) and restarts the
// appending of replicated bytes at the cut. It returns the offset cut at.
func (r *ReplicaLog) Truncate(offset int64) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A put that got past the refusal before the role changed lands
	// first: the end read below is then the end the master resends from.
	if err := r.st.awaitPutsLanded(); err != nil {
		return 0, err
	}
	if vis := r.st.commitLog.visible.Load(); offset >= vis && r.end.Load() <= vis {
		// Nothing past the last complete record: only the epochs that
		// start at or past the end go (they wrote nothing).
		if e := r.st.epochs; e != nil {
			if err := e.TruncateSuffixByOffset(vis); err != nil {
				return 0, err
			}
		}
		// The appended end restarts at the log's end: puts made while
		// this replica was master moved the end past the bytes it last
		// appended as a slave.
		r.restartLocked()
		return vis, nil
	}
	cut, err := r.st.TruncateTo(offset)
	if err != nil {
		return 0, err
	}
	r.restartLocked()
	return cut, nil
}

// restartLocked makes the appending of replicated bytes start again at
// the log's readable end.
func (r *ReplicaLog) restartLocked() {
	r.inited = false
	r.carry = r.carry[:0]
	r.end.Store(-1)
	r.initLocked()
}

// Store is the store the log belongs to.
func (r *ReplicaLog) Store() *DefaultMessageStore { return r.st }

// FileSize is the CommitLog file size (mappedFileSizeCommitLog): a master
// starts a syncFromLastFile slave at the start of its last file.
func (r *ReplicaLog) FileSize() int64 { return r.st.cfg.MappedFileSizeCommitLog }
