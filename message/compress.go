package message

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"
)

type inflater struct {
	src bytes.Reader
	zr  io.ReadCloser
	buf [32 << 10]byte
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// InflatedSize inflates a zlib body (RFC 1950, what producers write for
// sysFlag bit 0) and counts the bytes, without keeping them. It stops as
// soon as the count passes limit and then returns limit+1 and
// ErrInflatedTooLarge; limit < 0 means no limit. A body that is not a valid
// zlib stream gives ErrBadCompressed.
func InflatedSize(body []byte, limit int) (int, error) {
	f := inflaters.Get().(*inflater)
	defer func() {
		f.src.Reset(nil)
		inflaters.Put(f)
	}()
	f.src.Reset(body)
	var err error
	if f.zr == nil {
		f.zr, err = zlib.NewReader(&f.src)
	} else {
		err = f.zr.(zlib.Resetter).Reset(&f.src, nil)
	}
	if err != nil {
		f.zr = nil
		return 0, fmt.Errorf("%w: %v", ErrBadCompressed, err)
	}
	n := 0
	for {
		k, rerr := f.zr.Read(f.buf[:])
		n += k
		if limit >= 0 && n > limit {
			return limit + 1, fmt.Errorf("%w: more than %d bytes", ErrInflatedTooLarge, limit)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("%w: after %d bytes: %v", ErrBadCompressed, n, rerr)
		}
	}
}
