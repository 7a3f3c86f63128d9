//go:build race

package transport

import "syscall"

// The race detector's forms of loop_io.go: syscall.Read and Write carry
// the detector's annotations for I/O (a write to a socket happens before
// the read that returns it), which raw system calls would lack.

// mergeIovecs is off: rawWritev turns each iovec back into a slice, which
// the detector's pointer checks refuse across two allocations.
const mergeIovecs = false

func rawRead(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, err := syscall.Read(fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err.(syscall.Errno)
		}
		return n, 0
	}
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, err := syscall.Write(fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err.(syscall.Errno)
		}
		return n, 0
	}
}

// rawWritev writes the slices one after another; the count is what the
// socket took, as writev's.
func rawWritev(fd int, vecs []syscall.Iovec) (int, syscall.Errno) {
	total := 0
	for _, v := range vecs {
		b := unsafeSlice(v.Base, int(v.Len))
		n, e := rawWrite(fd, b)
		total += n
		if e != 0 {
			if total > 0 && e == syscall.EAGAIN {
				return total, 0
			}
			return total, e
		}
		if n < len(b) {
			break
		}
	}
	return total, 0
}
