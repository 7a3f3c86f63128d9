package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/spoolmq/spool/internal/store/index"
	"github.com/spoolmq/spool/message"
)

// recover loads the files and brings the CommitLog, the consume queues and
// the queue-offset table to a consistent state.
//
// Normal recovery (no abort file): the last three CommitLog files are
// scanned to find the end. Abnormal recovery (abort file present): the
// scan starts at the file holding the checkpoint's dispatched offset and
// validates every record (magic, size, body CRC, its own physical-offset
// field). An invalid record before the last flushed offset is corruption:
// Start fails naming file and offset, or with skipCorruptedRecords the
// record is skipped and counted. From the first invalid record past the
// flushed offset the tail is cut (and zeroed), consume-queue entries
// pointing past the end are truncated, and dispatch re-runs from the
// checkpoint's dispatched offset before any put is accepted.
func (st *DefaultMessageStore) recover() error {
	_, err := st.fs.Stat(st.cfg.abortPath())
	abnormal := err == nil
	cp, haveCP, err := readCheckpoint(st.fs, st.cfg.checkpointPath())
	if err != nil {
		if !abnormal {
			return err
		}
		st.logger.Warn("store: ignoring an unreadable checkpoint after a crash", "err", err)
		cp, haveCP = Checkpoint{}, false
	}
	if !haveCP && abnormal {
		cp = Checkpoint{}
	}
	c := st.commitLog
	if err := c.mfq.load(); err != nil {
		return err
	}
	limit := cp.LogicsDispatchedOffset
	if !haveCP {
		limit = 0
	}
	if err := st.loadConsumeQueues(abnormal, limit); err != nil {
		return err
	}
	end, err := st.recoverCommitLog(abnormal, cp, haveCP)
	if err != nil {
		return err
	}
	for _, cq := range st.allQueues() {
		if err := cq.truncatePhy(end); err != nil {
			return err
		}
	}
	// The writer's current file.
	if last := c.mfq.last(); last != nil {
		c.cur = last
		if last.wrote.Load() >= last.size {
			c.cur = nil // full: the next put rolls
		}
	}
	c.visible.Store(end)
	c.flushedWhere.Store(end)
	next := int64(0)
	if last := c.mfq.last(); last != nil {
		next = last.from + last.size
	}
	c.alloc.setNext(next)
	if c.cur == nil && c.mfq.count() == 0 {
		mf, err := createMappedFile(st.fs, c.mfq.dir, 0, st.cfg.MappedFileSizeCommitLog, st.cfg.FileAllocation, c.mmapped)
		if err != nil {
			return err
		}
		if err := c.mfq.appendFile(mf); err != nil {
			return err
		}
		c.cur = mf
		c.alloc.setNext(mf.size)
	}
	if c.committer != nil {
		c.pool = newTransientPool(st, st.cfg.TransientStorePoolSize, st.cfg.MappedFileSizeCommitLog)
		c.committer.where = end
		if c.cur != nil {
			// The current file continues in a buffer: copy its data in.
			b := c.pool.get()
			if _, err := c.cur.f.ReadAt(b[:c.cur.wrote.Load()], 0); err != nil {
				return fmt.Errorf("store: read %s into the write buffer: %w", c.cur.path, err)
			}
			c.cur.wbuf = b
		}
	}
	if c.gated.Load() {
		// Controller mode: dispatch never passed the confirm offset, so
		// re-dispatch goes no further than it did.
		c.confirm.Store(min(end, max(cp.ConfirmPhyOffset, cp.LogicsDispatchedOffset)))
	}
	// Re-dispatch what the queues may miss.
	from := end
	if haveCP || abnormal {
		from = min(cp.LogicsDispatchedOffset, end)
	}
	if !haveCP {
		from = c.minOffset()
	}
	from = max(from, c.minOffset())
	st.disp.reputFrom.Store(from)
	if err := st.disp.pass(); err != nil {
		return fmt.Errorf("store: re-dispatch from %d: %w", from, err)
	}
	for _, cq := range st.allQueues() {
		c.setQueueOffsetLocked(queueKey{cq.topic, cq.queueID}, cq.maxOffset.Load())
	}
	if st.cfg.MessageIndexEnable {
		if err := st.openIndex(abnormal, end); err != nil {
			return err
		}
	}
	if abnormal {
		st.logger.Warn("store: recovered after a crash", "commitLogEnd", end, "redispatchedFrom", from,
			"truncatedBytes", st.stats.truncatedBytes.Load(), "skippedRecords", st.stats.skippedCorrupt.Load())
	}
	return nil
}

// openIndex opens the index service and places its cursor.
func (st *DefaultMessageStore) openIndex(abnormal bool, end int64) error {
	svc, err := index.Open(index.Config{Dir: st.cfg.indexDir(), MaxHashSlotNum: st.cfg.MaxHashSlotNum,
		MaxIndexNum: st.cfg.MaxIndexNum, FS: st.fs, Logger: st.logger})
	if err != nil {
		return fmt.Errorf("store: open index: %w", err)
	}
	if abnormal {
		if err := svc.Truncate(end); err != nil {
			svc.Close()
			return fmt.Errorf("store: truncate index at %d: %w", end, err)
		}
	}
	from := max(svc.IndexedPhyOffset(), st.commitLog.minOffset())
	x := &indexDispatcher{st: st, svc: svc, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{})}
	x.cursor.Store(min(from, end))
	svc.Dispatched(x.cursor.Load())
	st.index = x
	return nil
}

func (st *DefaultMessageStore) loadConsumeQueues(abnormal bool, limit int64) error {
	root := st.cfg.consumeQueueDir()
	if err := st.fs.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("store: mkdir %s: %w", root, err)
	}
	topics, err := st.fs.ReadDir(root)
	if err != nil {
		return fmt.Errorf("store: list %s: %w", root, err)
	}
	for _, t := range topics {
		qs, err := st.fs.ReadDir(filepath.Join(root, t))
		if err != nil {
			continue // not a directory
		}
		for _, q := range qs {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil {
				continue
			}
			cq := st.consumeQueue(t, int32(id), true)
			if err := cq.load(abnormal, limit); err != nil {
				return err
			}
			// While the queue's first file is still open: entries whose
			// records retention removed are below the queue's minimum.
			// (Queues created by the re-dispatch start at or past it.)
			cq.correctMinOffset(st.commitLog.minOffset())
		}
	}
	return nil
}

// recoverCommitLog finds the end of the valid records and cuts the rest.
func (st *DefaultMessageStore) recoverCommitLog(abnormal bool, cp Checkpoint, haveCP bool) (int64, error) {
	c := st.commitLog
	files := c.mfq.snapshot()
	if len(files) == 0 {
		return 0, nil
	}
	flushedBoundary := cp.PhysicFlushedOffset
	startIdx := max(0, len(files)-3)
	if abnormal {
		startIdx = 0
		if haveCP {
			at := min(cp.LogicsDispatchedOffset, cp.PhysicFlushedOffset)
			for i, mf := range files {
				if mf.from <= at && at < mf.from+mf.size {
					startIdx = i
				}
			}
			if at >= files[len(files)-1].from+files[len(files)-1].size {
				startIdx = len(files) - 1
			}
		}
	}
	if !haveCP {
		// No record of what was durable: everything found is treated as
		// the unflushed tail (cut, never refused).
		flushedBoundary = 0
	}
	checkCRC := st.cfg.CheckCRCOnRecover || abnormal
	end := files[startIdx].from
	for fi := startIdx; fi < len(files); fi++ {
		mf := files[fi]
		sc := &fileScanner{mf: mf}
		pos := int64(0)
		for pos < mf.size {
			off := mf.from + pos
			var verr error
			hdr, err := sc.bytes(pos, blankSize)
			if err != nil {
				return 0, err
			}
			var size int64
			if hdr == nil {
				verr = fmt.Errorf("%d bytes left in the file, no room for an end-of-file marker", mf.size-pos)
			} else {
				sz, magic := message.PeekRecord(hdr)
				size = int64(sz)
				switch {
				case magic == message.BlankMagicCode && size == mf.size-pos:
					end = mf.from + mf.size
					pos = mf.size
					continue
				case magic != message.MagicCodeV1 && magic != message.MagicCodeV2:
					verr = fmt.Errorf("magic %#08x", uint32(magic))
				case size < message.MinRecordSize || size+blankSize > mf.size-pos:
					verr = fmt.Errorf("size %d with %d bytes left in the file", size, mf.size-pos)
				default:
					rec, err := sc.bytes(pos, size)
					if err != nil {
						return 0, err
					}
					verr = validateRecordAt(rec, off, size, checkCRC)
				}
			}
			if verr == nil {
				pos += size
				end = off + size
				continue
			}
			if off >= flushedBoundary {
				// The unflushed tail ends here.
				return st.cutAt(off, abnormal)
			}
			if !st.cfg.SkipCorruptedRecords {
				return 0, fmt.Errorf("%w: %s at file position %d (CommitLog offset %d), before the last flushed offset %d: %v; "+
					"refusing to start (skipCorruptedRecords=true skips it and loses the record)",
					ErrCorrupt, mf.path, pos, off, flushedBoundary, verr)
			}
			nextOff, err := st.findNextRecord(mf, off+1, checkCRC)
			if err != nil {
				return 0, err
			}
			st.stats.skippedCorrupt.Add(1)
			st.stats.skippedBytes.Add(nextOff - off)
			st.logger.Error("store: skipped corrupted CommitLog bytes", "file", mf.path, "offset", off, "bytes", nextOff-off, "err", verr)
			if nextOff >= mf.from+mf.size {
				// Nothing valid after it in this file: end the file here.
				if err := overwriteBlank(mf, pos); err != nil {
					return 0, err
				}
				end = mf.from + mf.size
				break
			}
			if err := st.overwriteFiller(mf, pos, nextOff-mf.from); err != nil {
				return 0, err
			}
			pos = nextOff - mf.from
			end = nextOff
		}
		if end < mf.from+mf.size {
			break // the data ends in this file
		}
	}
	return st.cutAt(end, abnormal)
}

// fileScanner reads a file sequentially through a buffer.
type fileScanner struct {
	mf      *MappedFile
	buf     []byte
	bufFrom int64
}

// bytes returns [pos, pos+n) of the file, or nil when the file ends first.
func (s *fileScanner) bytes(pos, n int64) ([]byte, error) {
	if pos+n > s.mf.size {
		return nil, nil
	}
	if pos >= s.bufFrom && pos+n <= s.bufFrom+int64(len(s.buf)) {
		return s.buf[pos-s.bufFrom : pos-s.bufFrom+n], nil
	}
	want := min(max(n, 4<<20), s.mf.size-pos)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	if _, err := s.mf.f.ReadAt(s.buf, pos); err != nil {
		return nil, fmt.Errorf("store: read %s at %d: %w", s.mf.path, pos, err)
	}
	s.bufFrom = pos
	return s.buf[:n], nil
}

// validateRecordAt checks the size bytes at the start of b as the record
// at off.
func validateRecordAt(b []byte, off, size int64, checkCRC bool) error {
	if size < message.MinRecordSize || size > int64(len(b)) {
		return fmt.Errorf("bad size %d", size)
	}
	var v message.RecordView
	return recordProblem(&v, b[:size], off, checkCRC)
}

// findNextRecord finds the next valid record in mf at or after off, or the
// file end.
func (st *DefaultMessageStore) findNextRecord(mf *MappedFile, off int64, checkCRC bool) (int64, error) {
	data := make([]byte, mf.size)
	if _, err := mf.f.ReadAt(data, 0); err != nil {
		return 0, fmt.Errorf("store: read %s: %w", mf.path, err)
	}
	for p := off - mf.from; p+blankSize <= mf.size; p++ {
		sz, magic := message.PeekRecord(data[p:])
		size := int64(sz)
		if magic == message.BlankMagicCode && size == mf.size-p {
			return mf.from + p, nil
		}
		if magic != message.MagicCodeV1 || size < message.MinRecordSize || p+size > mf.size {
			continue
		}
		if validateRecordAt(data[p:], mf.from+p, size, checkCRC) == nil {
			return mf.from + p, nil
		}
	}
	return mf.from + mf.size, nil
}

// overwriteFiller replaces skipped bytes [from, to) of mf with one valid
// filler record (a rolled-back transaction record of the empty topic: no
// queue entry, not indexed) so later recoveries do not stop there again.
// A gap too short for a record is left as it is.
func (st *DefaultMessageStore) overwriteFiller(mf *MappedFile, from, to int64) error {
	n := int(to - from)
	if n < message.MinRecordSize {
		st.logger.Warn("store: skipped gap too short for a filler record; it will be skipped again", "file", mf.path, "position", from, "bytes", n)
		return nil
	}
	host := message.Addr{IP: []byte{0, 0, 0, 0}}
	m := &message.Inner{Body: make([]byte, n-message.MinRecordSize), SysFlag: message.TransactionRollbackType,
		BornHost: host, StoreHost: host}
	rec := message.EncodeRecord(nil, m, "")
	if len(rec) != n {
		return fmt.Errorf("store: filler record is %d bytes, gap %d", len(rec), n)
	}
	message.PatchRecord(rec, 0, mf.from+from, st.fs.Now().UnixMilli())
	if _, err := mf.f.WriteAt(rec, from); err != nil {
		return fmt.Errorf("store: write filler into %s at %d: %w", mf.path, from, err)
	}
	if err := mf.f.Datasync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", mf.path, err)
	}
	return nil
}

// overwriteBlank writes a blank end-of-file record at pos.
func overwriteBlank(mf *MappedFile, pos int64) error {
	if _, err := mf.f.WriteAt(blankRecord(mf.size-pos), pos); err != nil {
		return err
	}
	return mf.f.Datasync()
}

// cutAt truncates the CommitLog at end. After a crash (zero) the bytes cut
// are zeroed and counted in truncatedBytes: from end to the last non-zero
// byte past it, so the zeros of a prepared file are not counted as lost
// data. A clean shutdown leaves only zeros past the end: only the
// positions move and nothing is counted.
func (st *DefaultMessageStore) cutAt(end int64, zero bool) (int64, error) {
	c := st.commitLog
	if !zero {
		return end, c.mfq.truncateNoZero(end)
	}
	var cut *MappedFile
	var cutTo int64 // end of the data past end
	for _, mf := range c.mfq.snapshot() {
		if mf.from+mf.size <= end {
			continue
		}
		from := max(end, mf.from) - mf.from
		if mf.from > end && !st.holdsRecordStart(mf) {
			continue // a prepared file nothing was written to
		}
		n, err := dataExtent(mf, from)
		if err != nil {
			return 0, err
		}
		if n > from {
			cutTo = mf.from + n
		}
		if mf.from <= end {
			cut = mf
		}
	}
	if cutTo > end {
		st.stats.truncatedBytes.Add(cutTo - end)
	}
	// Later files go; in the file holding end, only [end, data end) can
	// be non-zero.
	if err := c.mfq.truncateNoZero(end); err != nil {
		return 0, err
	}
	if cut != nil && cutTo > end {
		if err := zeroRange(cut, end-cut.from, min(cutTo-cut.from, cut.size)); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// holdsRecordStart reports whether the first bytes of mf are not zero:
// records fill a file from position 0, so a file whose start is zero was
// never written (a prepared file).
func (st *DefaultMessageStore) holdsRecordStart(mf *MappedFile) bool {
	var hdr [blankSize]byte
	if _, err := mf.f.ReadAt(hdr[:], 0); err != nil {
		return true // let dataExtent read it and report
	}
	return !allZero(hdr[:])
}

// dataExtent returns the position just past the last non-zero byte of mf
// at or after from (from when there is none).
func dataExtent(mf *MappedFile, from int64) (int64, error) {
	const chunk = 256 << 10
	buf := make([]byte, chunk)
	zeros := make([]byte, chunk)
	last := from
	for off := from; off < mf.size; off += chunk {
		n := min(chunk, mf.size-off)
		if _, err := mf.f.ReadAt(buf[:n], off); err != nil {
			return 0, fmt.Errorf("store: read %s at %d: %w", mf.path, off, err)
		}
		if bytes.Equal(buf[:n], zeros[:n]) {
			continue
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				last = off + i + 1
				break
			}
		}
	}
	return last, nil
}
