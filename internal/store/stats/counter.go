package stats

import "sync/atomic"

// Counter is a lock-free monotonic (or signed) 64-bit counter padded to its
// own cache line so that neighbouring counters do not share one.
type Counter struct {
	_ [56]byte
	v atomic.Int64
	_ [56]byte
}

// Add adds n (which may be negative) and returns the new value.
func (c *Counter) Add(n int64) int64 { return c.v.Add(n) }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Load returns the current value.
func (c *Counter) Load() int64 { return c.v.Load() }

// Store sets the value (for gauges such as a lag figure).
func (c *Counter) Store(n int64) { c.v.Store(n) }

// StoreMax raises the value to n if n is larger; it returns the value after.
func (c *Counter) StoreMax(n int64) int64 {
	for {
		cur := c.v.Load()
		if n <= cur {
			return cur
		}
		if c.v.CompareAndSwap(cur, n) {
			return n
		}
	}
}
