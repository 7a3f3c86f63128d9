package vfs

import (
	"os"
	"unsafe"
)

var pageSize = uintptr(os.Getpagesize())

// pageAligned widens b downwards to the start of its first page. b must be
// part of a mapping (mappings start on a page boundary).
func pageAligned(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	d := p % pageSize
	if d == 0 {
		return b
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -int(d))), len(b)+int(d))
}

// sliceAddr is the address of b's first byte.
func sliceAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
