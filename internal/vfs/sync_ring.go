package vfs

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syncs without a blocked thread. A goroutine that stays in a system call
// for more than 20 µs has its processor taken by the runtime's monitor,
// which wakes another thread to run the other goroutines and makes the
// goroutine queue for a processor again when the call returns: an fsync of
// half a millisecond costs the scheduler two thread hand-offs and keeps the
// monitor waking every 20 µs while syncs follow each other. So the OS
// file's Sync and Datasync go through an io_uring ring when the kernel has
// one: the sync runs in a kernel worker, and the goroutine waits on an
// eventfd the ring signals, parked in the runtime's poller like one waiting
// for a socket. A ring carries one sync at a time; syncRings of them are
// made on first use, and a sync that finds all of them busy, or a kernel
// without io_uring (or one that forbids it), runs fsync or fdatasync
// itself. SPOOL_IO_URING=off in the environment turns the rings off.

// syncRings is how many syncs can wait on rings at once.
const syncRings = 4

// Constants of the io_uring ABI (linux/io_uring.h).
const (
	ringOffSQRing     = 0
	ringOffSQEs       = 0x10000000
	ringFeatSingleMap = 1 << 0
	ringOpFsync       = 3
	ringFsyncDatasync = 1 << 0
	ringSQEAsync      = 1 << 4 // IOSQE_ASYNC: straight to a worker, no non-blocking try
	ringRegEventfd    = 4
	ringRegProbe      = 8
	ringOpSupported   = 1 << 0 // IO_URING_OP_SUPPORTED
	ringEntries       = 2
	ringSQESize       = 64
	ringCQESize       = 16
)

// ringParams is struct io_uring_params.
type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sq                                                                     ringOffsets // head, tail, ring_mask, ring_entries, flags, dropped, array
	cq                                                                     ringOffsets // head, tail, ring_mask, ring_entries, overflow, cqes, flags
}

type ringOffsets struct {
	off      [8]uint32
	userAddr uint64
}

// syncRing is one io_uring instance with its submission and completion
// rings mapped, and the eventfd it signals on each completion.
type syncRing struct {
	fd      int
	ev      *os.File // non-blocking: a Read parks in the runtime's poller
	ring    []byte
	sqes    []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
}

var rings struct {
	once    sync.Once
	free    chan *syncRing
	err     error                 // why there are no rings
	refused atomic.Pointer[error] // the ring refused a sync: rings are not used again
	syncs   atomic.Int64          // syncs run on a ring
}

// syncRingsReady reports whether rings were made, making them on first use.
func syncRingsReady() bool {
	rings.once.Do(func() {
		if os.Getenv("SPOOL_IO_URING") == "off" {
			rings.err = errors.New("SPOOL_IO_URING=off")
			return
		}
		free := make(chan *syncRing, syncRings)
		for range syncRings {
			r, err := newSyncRing()
			if err != nil {
				rings.err = err
				break
			}
			free <- r
		}
		if len(free) > 0 {
			rings.free = free
		}
	})
	return rings.free != nil && rings.refused.Load() == nil
}

// SyncMethod says how the OS file system syncs files: "io_uring" or, when
// no ring could be made, "fsync" with the reason.
func SyncMethod() string {
	if syncRingsReady() {
		return "io_uring"
	}
	if err := rings.refused.Load(); err != nil {
		return "fsync (io_uring refused a sync: " + (*err).Error() + ")"
	}
	return "fsync (" + rings.err.Error() + ")"
}

// RingSyncs is the number of syncs run on rings since the start.
func RingSyncs() int64 { return rings.syncs.Load() }

func newSyncRing() (r *syncRing, err error) {
	var p ringParams
	if unsafe.Sizeof(p) != 120 {
		return nil, errors.New("io_uring_params is not 120 bytes")
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, &os.SyscallError{Syscall: "io_uring_setup", Err: errno}
	}
	r = &syncRing{fd: int(fd)}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if p.features&ringFeatSingleMap == 0 {
		return nil, errors.New("io_uring without IORING_FEAT_SINGLE_MMAP")
	}
	size := max(p.sq.off[6]+p.sqEntries*4, p.cq.off[5]+p.cqEntries*ringCQESize)
	if r.ring, err = unix.Mmap(r.fd, ringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, &os.SyscallError{Syscall: "mmap", Err: err}
	}
	if r.sqes, err = unix.Mmap(r.fd, ringOffSQEs, int(p.sqEntries*ringSQESize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, &os.SyscallError{Syscall: "mmap", Err: err}
	}
	// The ring must say it runs IORING_OP_FSYNC (kernels from 5.6 answer
	// IORING_REGISTER_PROBE; a sandbox may offer rings without the op).
	var probe [16 + 8*(ringOpFsync+1)]byte
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, fd, ringRegProbe, uintptr(unsafe.Pointer(&probe[0])), ringOpFsync+1, 0, 0); errno != 0 {
		return nil, &os.SyscallError{Syscall: "io_uring_register(IORING_REGISTER_PROBE)", Err: errno}
	}
	if op := probe[16+8*ringOpFsync:]; probe[0] < ringOpFsync || op[0] != ringOpFsync || binary.NativeEndian.Uint16(op[2:])&ringOpSupported == 0 {
		return nil, errors.New("io_uring without IORING_OP_FSYNC")
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "eventfd", Err: err}
	}
	r.ev = os.NewFile(uintptr(efd), "io_uring eventfd")
	reg := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, fd, ringRegEventfd, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); errno != 0 {
		return nil, &os.SyscallError{Syscall: "io_uring_register", Err: errno}
	}
	base := unsafe.Pointer(&r.ring[0])
	r.sqTail = (*uint32)(unsafe.Add(base, p.sq.off[1]))
	r.sqMask = *(*uint32)(unsafe.Add(base, p.sq.off[2]))
	r.sqArray = unsafe.Add(base, p.sq.off[6])
	r.cqHead = (*uint32)(unsafe.Add(base, p.cq.off[0]))
	r.cqTail = (*uint32)(unsafe.Add(base, p.cq.off[1]))
	r.cqMask = *(*uint32)(unsafe.Add(base, p.cq.off[2]))
	r.cqes = unsafe.Add(base, p.cq.off[5])
	return r, nil
}

func (r *syncRing) close() {
	if r.ev != nil {
		r.ev.Close()
	}
	if r.sqes != nil {
		unix.Munmap(r.sqes)
	}
	if r.ring != nil {
		unix.Munmap(r.ring)
	}
	unix.Close(r.fd)
}

// sync runs fsync (datasync: fdatasync) of fd on the ring and returns its
// result; submitted is false when the kernel refused the request, and
// then nothing ran. The ring carries nothing else meanwhile.
func (r *syncRing) sync(fd int, datasync bool) (submitted bool, err error) {
	tail := atomic.LoadUint32(r.sqTail)
	idx := tail & r.sqMask
	sqe := r.sqes[idx*ringSQESize : (idx+1)*ringSQESize]
	clear(sqe)
	sqe[0] = ringOpFsync
	sqe[1] = ringSQEAsync
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	if datasync {
		*(*uint32)(unsafe.Pointer(&sqe[28])) = ringFsyncDatasync
	}
	*(*uint32)(unsafe.Add(r.sqArray, 4*idx)) = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == unix.EINTR || errno == unix.EAGAIN || errno == unix.EBUSY {
			continue
		}
		if errno != 0 {
			return false, &os.SyscallError{Syscall: "io_uring_enter", Err: errno}
		}
		if n == 1 {
			break
		}
	}
	var buf [8]byte
	for {
		head := atomic.LoadUint32(r.cqHead)
		if head != atomic.LoadUint32(r.cqTail) {
			res := *(*int32)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*ringCQESize+8))
			atomic.StoreUint32(r.cqHead, head+1)
			if res < 0 {
				return true, unix.Errno(-res)
			}
			return true, nil
		}
		// The count the ring adds for each completion is read off; one
		// left from a completion already taken only costs a look.
		if _, err := r.ev.Read(buf[:]); err != nil {
			return true, &os.SyscallError{Syscall: "read io_uring eventfd", Err: err}
		}
	}
}

// ringSync syncs fd on a free ring; ok is false when none was free (or
// there are none, or the kernel refused the request) and the caller must
// sync itself.
func ringSync(fd int, datasync bool) (ok bool, err error) {
	if !syncRingsReady() {
		return false, nil
	}
	var r *syncRing
	select {
	case r = <-rings.free:
	default:
		return false, nil
	}
	submitted, err := r.sync(fd, datasync)
	if retry, refuse := ringOutcome(err); retry {
		if refuse {
			why := err // its own variable: only a refusal puts it on the heap
			rings.refused.CompareAndSwap(nil, &why)
		}
		rings.free <- r
		return false, nil
	}
	if !submitted || err != nil && !isErrno(err) {
		// The ring is in a state not worth reasoning about: it is closed
		// and the others carry on.
		r.close()
		if !submitted {
			return false, nil
		}
		return true, err
	}
	rings.free <- r
	rings.syncs.Add(1)
	return true, err
}

// ringOutcome says what a sync's result from a ring means: retry when the
// sync did not run and the caller runs the system call instead (the call
// retries EINTR as before), refuse when the ring cannot run syncs at all (a
// regular file's fsync never fails with these; the system call gives the
// same error if it does).
func ringOutcome(err error) (retry, refuse bool) {
	switch err {
	case unix.EINVAL, unix.EOPNOTSUPP, unix.ENOSYS:
		return true, true
	case unix.ECANCELED, unix.EINTR, unix.EAGAIN:
		return true, false
	}
	return false, false
}

func isErrno(err error) bool {
	_, ok := err.(unix.Errno)
	return ok
}
