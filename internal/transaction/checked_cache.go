package transaction

import "sync"

// CheckedCacheBytes bounds the records kept by checkedCache.
const CheckedCacheBytes = 4 << 20

// CheckedCache keeps the half records the check service has just read, so
// the END_TRANSACTION that answers a check (commit, usually within
// milliseconds) does not read the same cold record again. Oldest first
// out; an entry is dropped when taken.
type CheckedCache struct {
	mu    sync.Mutex
	recs  map[int64][]byte // commit-log offset -> record
	order []int64
	bytes int64
	limit int64
}

func NewCheckedCache(limit int64) *CheckedCache {
	return &CheckedCache{recs: make(map[int64][]byte), limit: limit}
}

// Put keeps rec (which the caller must not modify afterwards).
func (c *CheckedCache) Put(phy int64, rec []byte) {
	if int64(len(rec)) > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.recs[phy]; ok {
		return
	}
	for c.bytes+int64(len(rec)) > c.limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if r, ok := c.recs[old]; ok {
			c.bytes -= int64(len(r))
			delete(c.recs, old)
		}
	}
	c.recs[phy] = rec
	c.order = append(c.order, phy)
	c.bytes += int64(len(rec))
}

// Take returns and forgets the record at phy.
func (c *CheckedCache) Take(phy int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.recs[phy]
	if ok {
		delete(c.recs, phy)
		c.bytes -= int64(len(rec))
		// order keeps the offset until it comes up for eviction; entries
		// no longer in recs are skipped then.
		if len(c.order) > 4*len(c.recs)+64 {
			kept := c.order[:0]
			for _, o := range c.order {
				if _, live := c.recs[o]; live {
					kept = append(kept, o)
				}
			}
			c.order = kept
		}
	}
	return rec, ok
}
