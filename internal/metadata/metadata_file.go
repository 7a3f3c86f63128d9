package metadata

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// File writes one small JSON file (topics.json, subscriptionGroup.json,
// consumerOffset.json, delayOffset.json) off the hot path: a change marks it
// dirty, and a background goroutine takes a snapshot and replaces the file
// atomically (temp file, fsync, rename, fsync of the directory). Flush
// writes synchronously and is used at shutdown.
type File struct {
	Path     string
	snapshot func() ([]byte, error)
	written  func() // after each successful write, under writeMu (optional)
	// pause is the least time between two background writes (0: none),
	// for a file whose changes are durable elsewhere first (topics.json,
	// whose changes the topic journal holds).
	pause  time.Duration
	logger *slog.Logger

	dirty chan struct{}
	stop  chan struct{}
	done  chan struct{}

	writeMu sync.Mutex // serializes writers of the file
	started bool

	genMu sync.Mutex
	gen   chan struct{} // closed when the next write to take a snapshot ends

	// write replaces the file (writeFileAtomic; tests swap it). A failed
	// write (a full disk) is retried from retryMin, doubling up to
	// retryMax, until it succeeds or the file is closed.
	write              func(path string, data []byte) error
	retryMin, retryMax time.Duration
	failures           atomic.Int64
}

func NewFile(path string, snapshot func() ([]byte, error), logger *slog.Logger) *File {
	return &File{
		Path:     path,
		snapshot: snapshot,
		logger:   logger,
		dirty:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		write:    WriteFileAtomic,
		retryMin: 100 * time.Millisecond,
		retryMax: 10 * time.Second,
	}
}

// Load returns the file's content, or nil when it does not exist.
func (f *File) Load() ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrMetadata, f.Path, err)
	}
	return b, nil
}

// MarkDirty asks the background writer to persist a new snapshot.
func (f *File) MarkDirty() {
	select {
	case f.dirty <- struct{}{}:
	default:
	}
}

// DirtyWait marks the file dirty and returns a channel closed when a write
// whose snapshot was taken after the call has ended (successfully or with
// its error logged), so everything changed before the call is on disk.
func (f *File) DirtyWait() <-chan struct{} {
	f.genMu.Lock()
	if f.gen == nil {
		f.gen = make(chan struct{})
	}
	ch := f.gen
	f.genMu.Unlock()
	f.MarkDirty()
	return ch
}

func (f *File) Start() {
	f.started = true
	go f.run()
}

func (f *File) run() {
	defer close(f.done)
	var retry *time.Timer
	var retryC <-chan time.Time
	backoff := f.retryMin
	for {
		select {
		case <-f.stop:
			if retry != nil {
				retry.Stop()
			}
			return
		case <-f.dirty:
		case <-retryC:
		}
		err := f.Flush()
		if err == nil {
			if backoff != f.retryMin {
				f.logger.Info("persist metadata: written again", "file", f.Path)
			}
			retryC, backoff = nil, f.retryMin
			if f.pause > 0 && !f.sleep(f.pause) {
				return
			}
			continue
		}
		// The change is still in memory: write it again later (a full
		// disk passes), from a fresh snapshot.
		if backoff == f.retryMin {
			f.logger.Error("persist metadata failed; retrying with a back-off", "file", f.Path, "err", err)
		}
		f.failures.Add(1)
		if retry == nil {
			retry = time.NewTimer(backoff)
		} else {
			retry.Reset(backoff)
		}
		retryC = retry.C
		backoff = min(2*backoff, f.retryMax)
	}
}

// sleep waits d, or until the file is closed (then false).
func (f *File) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	}
}

// Close stops the background writer and writes a final snapshot.
func (f *File) Close() error {
	if f.started {
		select {
		case <-f.stop:
		default:
			close(f.stop)
		}
		<-f.done
	}
	return f.Flush()
}

// Flush writes the current snapshot now.
func (f *File) Flush() error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	f.genMu.Lock()
	gen := f.gen
	f.gen = nil
	f.genMu.Unlock()
	if gen != nil {
		defer close(gen)
	}
	data, err := f.snapshot()
	if err != nil {
		return fmt.Errorf("%w: encode %s: %w", ErrMetadata, f.Path, err)
	}
	if err := f.write(f.Path, data); err != nil {
		return fmt.Errorf("%w: %w", ErrMetadata, err)
	}
	if f.written != nil {
		f.written()
	}
	return nil
}

// WriteFileAtomic replaces path with data: temp file, fsync, rename, fsync
// of the directory.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		os.Remove(tmp) // give back what a partial write took (a full disk)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}
