package store

import (
	"runtime"
	"sync"
)

// putLock is the CommitLog's one write lock.
type putLock interface {
	Lock()
	Unlock()
}

// newPutLock returns a mutex (useReentrantLockWhenPutMessage=true) or a
// bounded spin that parks after spinLimit failed attempts. A pure spin lock,
// RocketMQ's choice for false, burns a core whenever the holder is
// preempted; on a small machine that is the common case under load.
func newPutLock(reentrant bool) putLock {
	if reentrant {
		return &sync.Mutex{}
	}
	return &spinThenParkLock{}
}

const spinLimit = 64

type spinThenParkLock struct{ mu sync.Mutex }

func (l *spinThenParkLock) Lock() {
	for i := 0; i < spinLimit; i++ {
		if l.mu.TryLock() {
			return
		}
		if i >= spinLimit/2 {
			runtime.Gosched()
		}
	}
	l.mu.Lock()
}

func (l *spinThenParkLock) Unlock() { l.mu.Unlock() }
