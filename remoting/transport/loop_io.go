//go:build !race

package transport

import (
	"syscall"
	"unsafe"
)

// System calls of the event loops on their non-blocking sockets. They go
// through syscall.RawSyscall, not Syscall: a call that cannot block needs
// no hand-off of its P, and skipping entersyscall spares the scheduler
// work (and the wake-up of the runtime's monitor thread after an idle
// spell) that every Syscall pays. Under the race detector
// (loop_io_race.go) they are syscall.Read and Write instead, whose
// annotations tell the detector that what one goroutine wrote to a socket
// happened before another read it.

// mergeIovecs lets a writev's iovec cover pieces that lie end to end in
// memory (outBuf.fillVecs).
const mergeIovecs = true

// rawRead reads what the socket holds, up to len(p).
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// rawWritev writes what the socket takes of vecs.
func rawWritev(fd int, vecs []syscall.Iovec) (int, syscall.Errno) {
	if len(vecs) == 0 {
		return 0, 0
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// rawWrite writes what the socket takes of p.
func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}
