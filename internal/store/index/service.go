package index

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// writeBackBytes is how many bytes of entries Put buffers before writing
// them (and the slot pages they changed) back; Flush writes back whatever
// is buffered.
const writeBackBytes = 1 << 20

// Default geometry, RocketMQ's maxHashSlotNum and maxIndexNum.
const (
	DefaultMaxHashSlotNum = 5_000_000
	DefaultMaxIndexNum    = 20_000_000
)

// Config configures a Service.
type Config struct {
	// Dir is the index directory, storePathRootDir/index.
	Dir string
	// MaxHashSlotNum and MaxIndexNum set the file geometry (0 = defaults).
	// Files written with another geometry are treated as corrupt.
	MaxHashSlotNum int
	MaxIndexNum    int
	// FS is the file system and clock (nil = vfs.OS()).
	FS vfs.FS
	// Logger receives file creation, repair and removal events (nil =
	// slog.Default()).
	Logger *slog.Logger
}

// QueryResult is the answer to Query.
type QueryResult struct {
	// PhyOffsets are the CommitLog offsets found, newest first. A hash
	// collision can return an offset whose record has another key: the
	// caller checks the record.
	PhyOffsets []int64
	// LastUpdateTimestamp and LastUpdatePhyOffset are the newest file's
	// endTimestamp and endPhyOffset, as RocketMQ returns them.
	LastUpdateTimestamp int64
	LastUpdatePhyOffset int64
}

// Stats are the service's counters.
type Stats struct {
	Files          int   // index files open
	Keys           int64 // entries written since start
	Records        int64 // records that added entries since start
	FilesCreated   int64
	FilesDeleted   int64
	CorruptDropped int64 // unreadable files removed at Open
	Repaired       int64 // entries dropped by Truncate or a load repair
	IndexedPhy     int64 // see IndexedPhyOffset
}

// Service is the message-key index (RocketMQ's IndexService). Every method
// is safe from any goroutine; Put is meant for the store's index dispatcher
// alone (records must come in CommitLog order). A query
// holds a read lock for its duration, so deletion and truncation wait for
// running queries; Put only takes the write lock to add a new file.
type Service struct {
	cfg    Config
	fs     vfs.FS
	logger *slog.Logger

	writeMu sync.Mutex  // serialises Put, write-backs, Truncate, DeleteExpired, Close
	flushMu sync.Mutex  // serialises syncing with closing files; taken after writeMu
	hashes  []int32     // under writeMu
	broken  error       // sticky write error, under writeMu
	dirNew  atomic.Bool // a file was created or removed since the last directory sync

	mu     sync.RWMutex // guards files and closed
	files  []*indexFile // oldest first; the last one is writable
	closed bool

	indexed          atomic.Int64 // highest phyOffset fully indexed, -1 none
	cursor           atomic.Int64 // next CommitLog offset the dispatcher will feed
	flushedTimestamp atomic.Int64

	keys, records, created, deleted, corrupt, repaired atomic.Int64
}

// Open loads the index files in cfg.Dir (creating the directory), oldest
// first. A file whose size or header is impossible is removed and counted
// (it is derived data). If the newest file's slots point past its header's
// count (a put cut short by a kill), the file is repaired.
func Open(cfg Config) (*Service, error) {
	if cfg.MaxHashSlotNum <= 0 {
		cfg.MaxHashSlotNum = DefaultMaxHashSlotNum
	}
	if cfg.MaxIndexNum <= 0 {
		cfg.MaxIndexNum = DefaultMaxIndexNum
	}
	if cfg.MaxIndexNum < 2 {
		return nil, fmt.Errorf("index: maxIndexNum %d: need at least 2 (entry 0 is unused)", cfg.MaxIndexNum)
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, fs: cfg.FS, logger: cfg.Logger}
	s.indexed.Store(-1)
	if err := s.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: create %s: %w", cfg.Dir, err)
	}
	names, err := s.fs.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("index: list %s: %w", cfg.Dir, err)
	}
	for _, name := range names { // sorted: names are fixed-width times
		if !isIndexFileName(name) {
			continue
		}
		path := filepath.Join(cfg.Dir, name)
		f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			s.closeFiles()
			return nil, fmt.Errorf("index: open %s: %w", path, err)
		}
		x, err := openIndexFile(f, name, cfg.MaxHashSlotNum, cfg.MaxIndexNum)
		if errors.Is(err, ErrCorrupt) {
			f.Close()
			s.logger.Error("index: removing unreadable index file; its keys are no longer found", "file", path, "err", err)
			if rerr := s.fs.Remove(path); rerr != nil {
				s.closeFiles()
				return nil, fmt.Errorf("index: remove %s: %w", path, rerr)
			}
			s.corrupt.Add(1)
			s.dirNew.Store(true)
			continue
		}
		if err != nil {
			f.Close()
			s.closeFiles()
			return nil, err
		}
		s.files = append(s.files, x)
	}
	if n := len(s.files); n > 0 {
		last := s.files[n-1]
		inconsistent, err := last.loadSlots()
		if err != nil {
			s.closeFiles()
			return nil, err
		}
		if inconsistent {
			dropped, err := last.repair(1<<63 - 1)
			if err != nil {
				s.closeFiles()
				return nil, err
			}
			s.repaired.Add(int64(dropped))
			s.logger.Warn("index: repaired newest index file after an interrupted write", "file", last.name, "droppedEntries", dropped)
		}
	}
	s.resetIndexedLocked()
	s.cursor.Store(max(0, s.indexed.Load()))
	return s, nil
}

func isIndexFileName(name string) bool {
	if len(name) != 17 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// fileName formats t as yyyyMMddHHmmssSSS in local time.
func fileName(t time.Time) string {
	t = t.Local()
	return fmt.Sprintf("%s%03d", t.Format("20060102150405"), t.Nanosecond()/int(time.Millisecond))
}

// parseFileName is the inverse of fileName.
func parseFileName(name string) (time.Time, bool) {
	if !isIndexFileName(name) {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("20060102150405", name[:14], time.Local)
	if err != nil {
		return time.Time{}, false
	}
	ms := int(name[14]-'0')*100 + int(name[15]-'0')*10 + int(name[16]-'0')
	return t.Add(time.Duration(ms) * time.Millisecond), true
}

// resetIndexedLocked sets indexed from the newest file holding entries.
// Caller holds writeMu (or is Open).
func (s *Service) resetIndexedLocked() {
	s.indexed.Store(-1)
	for i := len(s.files) - 1; i >= 0; i-- {
		if h := s.files[i].header(); h.indexCount > 1 {
			s.indexed.Store(h.endPhyOffset)
			return
		}
	}
}

func (s *Service) closeFiles() {
	for _, x := range s.files {
		x.f.Close()
	}
	s.files = nil
}

// Put indexes one CommitLog record: "topic#uniqKey" (if not empty) and
// "topic#key" for each non-empty key, all pointing at phyOffset. Records at
// or below IndexedPhyOffset are ignored, so the dispatcher may restart from
// any offset at or before its last fed record. The caller leaves out what
// RocketMQ does not index (rollback transaction records). All keys of a
// record go to one file; a record that does not fit starts a new one. After
// a write error Put returns ErrBroken (wrapping the cause) until restart.
// Put keeps none of its strings (it stores their hashes), so they may
// alias a buffer the caller reuses.
func (s *Service) Put(topic string, keys []string, uniqKey string, phyOffset, storeTimestamp int64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if c := s.cursor.Load(); phyOffset > c {
		s.cursor.Store(phyOffset)
	}
	if phyOffset <= s.indexed.Load() {
		return nil
	}
	hashes := s.hashes[:0]
	prefix := topicPrefixHash(topic)
	if uniqKey != "" {
		hashes = append(hashes, absKeyHash(javaStringHashFrom(prefix, uniqKey)))
	}
	for _, k := range keys {
		if k != "" {
			hashes = append(hashes, absKeyHash(javaStringHashFrom(prefix, k)))
		}
	}
	s.hashes = hashes
	if len(hashes) == 0 {
		return nil
	}
	for len(hashes) > 0 {
		x, err := s.writableLocked(len(hashes))
		if err != nil {
			return s.breakLocked(err)
		}
		n := min(len(hashes), x.room())
		x.putKeysLocked(hashes[:n], phyOffset, storeTimestamp)
		s.keys.Add(int64(n))
		hashes = hashes[n:]
		if x.pendingBytes() >= writeBackBytes {
			if err := x.writeBackLocked(); err != nil {
				return s.breakLocked(err)
			}
		}
	}
	s.records.Add(1)
	s.indexed.Store(phyOffset)
	return nil
}

func (s *Service) breakLocked(err error) error {
	s.broken = fmt.Errorf("%w: %w", ErrBroken, err)
	s.logger.Error("index: building stopped", "err", err)
	return s.broken
}

// writableLocked returns the newest file if it has room for need entries
// (or is empty: a record larger than a whole file is split), creating a new
// file otherwise.
func (s *Service) writableLocked(need int) (*indexFile, error) {
	s.mu.RLock()
	closed := s.closed
	var last *indexFile
	if n := len(s.files); n > 0 {
		last = s.files[n-1]
	}
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	var prevEndPhy, prevEndTs int64
	var prevName string
	if last != nil {
		h := last.header()
		if !last.full() && (last.room() >= need || h.indexCount <= 1) {
			return last, nil
		}
		prevEndPhy, prevEndTs, prevName = h.endPhyOffset, h.endTimestamp, last.name
		if err := last.writeBackLocked(); err != nil {
			return nil, err
		}
	}
	now := s.fs.Now()
	if pt, ok := parseFileName(prevName); ok && !now.After(pt) {
		now = pt.Add(time.Millisecond) // names must grow
	}
	name := fileName(now)
	path := filepath.Join(s.cfg.Dir, name)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", path, err)
	}
	x, err := createIndexFile(f, name, s.cfg.MaxHashSlotNum, s.cfg.MaxIndexNum, prevEndPhy, prevEndTs)
	if err != nil {
		f.Close()
		_ = s.fs.Remove(path)
		return nil, err
	}
	s.mu.Lock()
	s.files = append(s.files, x)
	s.mu.Unlock()
	if last != nil {
		last.mu.Lock()
		last.slots = nil // read-only from now on: slots are read from the file
		last.mu.Unlock()
		last.dirty = nil
	}
	s.dirNew.Store(true)
	s.created.Add(1)
	s.logger.Info("index: created index file", "file", path)
	return x, nil
}

// Dispatched tells the service that the dispatcher has fed every record
// below nextPhyOffset (records without keys included), for IndexLagBytes.
func (s *Service) Dispatched(nextPhyOffset int64) {
	for {
		c := s.cursor.Load()
		if nextPhyOffset <= c || s.cursor.CompareAndSwap(c, nextPhyOffset) {
			return
		}
	}
}

// IndexedPhyOffset is the CommitLog offset of the newest record whose keys
// are all indexed, or -1 when there is none. After Open and Truncate it
// comes from the files, so the dispatcher resumes from the record at this
// offset (it is skipped) or earlier.
func (s *Service) IndexedPhyOffset() int64 { return s.indexed.Load() }

// IndexLagBytes is how far the index dispatcher is behind a CommitLog whose
// max offset is commitLogMax (0 when caught up).
func (s *Service) IndexLagBytes(commitLogMax int64) int64 {
	return max(0, commitLogMax-s.cursor.Load())
}

// Query returns the CommitLog offsets of records indexed under topic#key
// whose store time (rounded down to the second, see the package doc) lies in
// [begin, end], newest file first, at most maxNum (the caller applies
// RocketMQ's maxMsgsNumBatch). On a read error it returns what it found so
// far and the error.
func (s *Service) Query(topic, key string, maxNum int, begin, end int64) (QueryResult, error) {
	var r QueryResult
	if maxNum <= 0 {
		return r, nil
	}
	kh := TopicKeyHash(topic, key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return r, ErrClosed
	}
	for i := len(s.files) - 1; i >= 0; i-- {
		x := s.files[i]
		h := x.header()
		if i == len(s.files)-1 {
			r.LastUpdateTimestamp, r.LastUpdatePhyOffset = h.endTimestamp, h.endPhyOffset
		}
		if h.indexCount <= 1 {
			continue // empty: its times are only carried over
		}
		if h.timeMatched(begin, end) {
			var err error
			r.PhyOffsets, err = x.selectPhyOffsets(r.PhyOffsets, kh, maxNum, begin, end)
			if err != nil {
				return r, err
			}
		}
		if h.beginTimestamp < begin || len(r.PhyOffsets) >= maxNum {
			break
		}
	}
	return r, nil
}

// Flush writes the buffered changes of the newest file to it, then makes
// every file written since the last Flush durable (fdatasync), then the
// directory if a file was created or removed, and records the endTimestamp
// of the newest file's written header as FlushedTimestamp. It does not
// block Put: Put waits only for the write-back (page-cache writes), a slow
// fsync delays only other Flush, Truncate, DeleteExpired and Close calls.
func (s *Service) Flush() error {
	s.writeMu.Lock()
	err := s.writeBackLocked()
	s.writeMu.Unlock()
	if err != nil {
		return err
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushLocked()
}

// writeBackLocked writes the newest file's buffered changes (caller holds
// writeMu). A failure stops building, as a failed Put does.
func (s *Service) writeBackLocked() error {
	if s.broken != nil {
		return s.broken
	}
	s.mu.RLock()
	var last *indexFile
	if n := len(s.files); n > 0 && !s.closed {
		last = s.files[n-1]
	}
	s.mu.RUnlock()
	if last == nil || !last.pending() {
		return nil
	}
	if err := last.writeBackLocked(); err != nil {
		return s.breakLocked(err)
	}
	return nil
}

func (s *Service) flushLocked() error {
	s.mu.RLock()
	files := append([]*indexFile(nil), s.files...)
	s.mu.RUnlock()
	var ts int64
	for _, x := range files {
		h, err := x.sync()
		if err != nil {
			return err
		}
		ts = h.endTimestamp
	}
	if s.dirNew.Swap(false) {
		if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
			s.dirNew.Store(true)
			return fmt.Errorf("index: sync directory %s: %w", s.cfg.Dir, err)
		}
	}
	if ts > 0 {
		s.flushedTimestamp.Store(ts)
	}
	return nil
}

// FlushedTimestamp is the endTimestamp of the newest file at the last
// successful Flush (the checkpoint's index timestamp), 0 before.
func (s *Service) FlushedTimestamp() int64 { return s.flushedTimestamp.Load() }

// Truncate drops index entries at or past phyOffset, the CommitLog end
// recovery settled on; the store calls it after an abnormal stop, before
// re-dispatching. Whole files whose first record is at or past phyOffset
// are removed; the newest remaining file is validated entry by entry, cut
// at the first implausible entry or the first entry at or past phyOffset
// (then the last kept record's entries go too, it may be incomplete), and
// its hash slots are rebuilt. Cost: one read of that file's entries and a
// rewrite of its slot table.
func (s *Service) Truncate(phyOffset int64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if err := s.writeBackLocked(); err != nil && !errors.Is(err, ErrBroken) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for len(s.files) > 0 {
		x := s.files[len(s.files)-1]
		h := x.header()
		// A file with entries begins at its first record. An empty newest
		// file only carries the previous file's end; it goes when there is
		// an older one (it is recreated on the next Put).
		remove := (h.indexCount > 1 && h.beginPhyOffset >= phyOffset) || (h.indexCount <= 1 && len(s.files) > 1)
		if !remove {
			break
		}
		if err := s.removeFileLocked(x); err != nil {
			return err
		}
		s.files = s.files[:len(s.files)-1]
	}
	if n := len(s.files); n > 0 {
		x := s.files[n-1]
		dropped, err := x.repair(phyOffset)
		if err != nil {
			return err
		}
		if dropped > 0 {
			s.repaired.Add(int64(dropped))
			s.logger.Warn("index: truncated index file", "file", x.name, "droppedEntries", dropped, "phyOffset", phyOffset)
		}
	}
	s.broken = nil
	s.resetIndexedLocked()
	s.cursor.Store(max(0, min(s.cursor.Load(), phyOffset)))
	return nil
}

func (s *Service) removeFileLocked(x *indexFile) error {
	path := filepath.Join(s.cfg.Dir, x.name)
	x.f.Close()
	if err := s.fs.Remove(path); err != nil {
		return fmt.Errorf("index: remove %s: %w", path, err)
	}
	s.dirNew.Store(true)
	s.deleted.Add(1)
	s.logger.Info("index: removed index file", "file", path)
	return nil
}

// DeleteExpired removes the oldest files whose endPhyOffset is below
// minPhyOffset (the CommitLog's minimum), never the newest file, and
// returns how many went.
func (s *Service) DeleteExpired(minPhyOffset int64) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	n := 0
	for len(s.files) > 1 && s.files[0].header().endPhyOffset < minPhyOffset {
		if err := s.removeFileLocked(s.files[0]); err != nil {
			return n, err
		}
		s.files = s.files[1:]
		n++
	}
	return n, nil
}

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	s.mu.RLock()
	files := len(s.files)
	s.mu.RUnlock()
	return Stats{Files: files, Keys: s.keys.Load(), Records: s.records.Load(), FilesCreated: s.created.Load(),
		FilesDeleted: s.deleted.Load(), CorruptDropped: s.corrupt.Load(), Repaired: s.repaired.Load(),
		IndexedPhy: s.indexed.Load()}
}

// Close flushes and closes the files. Later calls return ErrClosed.
func (s *Service) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	wasBroken := s.broken != nil
	err := s.writeBackLocked()
	if wasBroken {
		err = nil // reported when building stopped
	}
	if ferr := s.flushLocked(); err == nil {
		err = ferr
	}
	s.mu.Lock()
	s.closed = true
	for _, x := range s.files {
		if cerr := x.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("index: close %s: %w", x.name, cerr)
		}
	}
	s.files = nil
	s.mu.Unlock()
	return err
}
