package vfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrWouldBlock is what a read that must not wait returns when the bytes
// are not all in memory (the page cache): reading them would wait for
// the device.
var ErrWouldBlock = errors.New("vfs: the read would wait for the device")

// NoWaitReader is a File that can read only what is already in memory.
type NoWaitReader interface {
	// ReadAtNoWait is ReadAt that returns ErrWouldBlock instead of
	// waiting for the device; what it returns with a nil error is what
	// ReadAt would return.
	ReadAtNoWait(p []byte, off int64) (int, error)
}

// ReadAtNoWait reads f as ReadAt does when the bytes are in memory, and
// returns ErrWouldBlock when they are not, or when f cannot tell (it does
// not implement NoWaitReader).
func ReadAtNoWait(f File, p []byte, off int64) (int, error) {
	if r, ok := f.(NoWaitReader); ok {
		return r.ReadAtNoWait(p, off)
	}
	return 0, ErrWouldBlock
}

// ReadAtNoWait reads with preadv2(RWF_NOWAIT): the kernel answers EAGAIN
// instead of waiting for the device (it may start reading ahead, so a
// later read can find the bytes). A kernel or file system that refuses
// the flag answers ErrWouldBlock too, so the caller reads the ordinary
// way.
func (f *osFile) ReadAtNoWait(p []byte, off int64) (int, error) {
	iov := [][]byte{nil}
	n := 0
	for n < len(p) {
		iov[0] = p[n:]
		m, err := unix.Preadv2(f.fd, iov, off+int64(n), unix.RWF_NOWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			if err == unix.EAGAIN || err == unix.EOPNOTSUPP || err == unix.EINVAL || err == unix.ENOSYS {
				return n, ErrWouldBlock
			}
			return n, f.pathErr("preadv2", err)
		case m == 0:
			// Past the end of the file, or a part not in memory after
			// some that was (a short read): ReadAt would say which.
			return n, ErrWouldBlock
		}
		n += m
	}
	return n, nil
}
