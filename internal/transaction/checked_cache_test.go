package transaction

import "testing"

func TestCheckedCacheBound(t *testing.T) {
	c := NewCheckedCache(100)
	for i := int64(0); i < 10; i++ {
		c.Put(i, make([]byte, 30))
	}
	if c.bytes > 100 || len(c.recs) != 3 {
		t.Fatalf("%d bytes in %d records", c.bytes, len(c.recs))
	}
	if _, ok := c.Take(0); ok {
		t.Fatal("the oldest record was kept")
	}
	if r, ok := c.Take(9); !ok || len(r) != 30 {
		t.Fatal("the newest record is gone")
	}
	if _, ok := c.Take(9); ok {
		t.Fatal("a record was taken twice")
	}
	c.Put(20, make([]byte, 101)) // larger than the bound: not kept
	if _, ok := c.Take(20); ok || c.bytes != 60 {
		t.Fatalf("oversized record kept; %d bytes", c.bytes)
	}
	for i := int64(100); i < 1000; i++ {
		c.Put(i, make([]byte, 1))
		c.Take(i)
	}
	if len(c.order) > 4*len(c.recs)+64 {
		t.Fatalf("order grew to %d for %d records", len(c.order), len(c.recs))
	}
}
