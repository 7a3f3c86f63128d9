package namesrv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// kvPersister writes the KV-config file from its own goroutine, so no
// request waits for the disk: a mutation marks the table dirty and kicks the
// writer, which snapshots the latest state and replaces the file atomically.
// Bursts of mutations coalesce into one write. A failed write is retried
// after retryDelay, and again at every later mutation.
type kvPersister struct {
	path     string
	snapshot func() []byte // returns the encoded table; takes the server's lock itself
	log      *slog.Logger

	dirty atomic.Bool
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	lastErr error
	written uint64 // successful writes, for tests
	waiters []chan error
}

const kvRetryDelay = time.Second

func newKVPersister(path string, snapshot func() []byte, log *slog.Logger) *kvPersister {
	p := &kvPersister{
		path: path, snapshot: snapshot, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p
}

// markDirty records that the table changed and wakes the writer.
func (p *kvPersister) markDirty() {
	p.dirty.Store(true)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// sync waits until every mutation made before the call is on disk and
// returns the write's error.
func (p *kvPersister) sync() error {
	ch := make(chan error, 1)
	p.mu.Lock()
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	p.dirty.Store(true)
	select {
	case p.kick <- struct{}{}:
	default:
	}
	select {
	case err := <-ch:
		return err
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.lastErr
	}
}

// close writes any pending change and stops the writer; it returns the
// error of the last write, if that failed.
func (p *kvPersister) close() error {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *kvPersister) run() {
	defer close(p.done)
	var retry <-chan time.Time
	for {
		select {
		case <-p.kick:
		case <-retry:
		case <-p.stop:
			if p.dirty.Load() {
				p.writeOnce()
			}
			return
		}
		retry = nil
		if !p.dirty.Load() {
			continue
		}
		if err := p.writeOnce(); err != nil {
			retry = time.After(kvRetryDelay)
		}
	}
}

// writeOnce writes the current snapshot and answers the sync waiters
// registered before the snapshot was taken.
func (p *kvPersister) writeOnce() error {
	// Clear dirty before collecting waiters: a waiter added after the
	// collection sets dirty again after this store, so the loop runs once
	// more for it.
	p.dirty.Store(false)
	p.mu.Lock()
	waiters := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	err := writeFileAtomic(p.path, p.snapshot())
	p.mu.Lock()
	p.lastErr = err
	if err == nil {
		p.written++
	}
	p.mu.Unlock()
	if err != nil {
		p.dirty.Store(true)
		p.log.Error("kv config not persisted; will retry", "path", p.path, "err", err)
	}
	for _, w := range waiters {
		w <- err
	}
	return err
}

// writeFileAtomic replaces path with data: a temp file in the same
// directory, fsync, rename over path, fsync of the directory. A reader (or
// a crash) sees the old file or the new one, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("create temp for %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
