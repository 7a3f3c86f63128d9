package store

import "testing"

func TestCQFlushDue(t *testing.T) {
	const perPage = osPageSize / CQEntrySize // 204 entries fill a page (204.8)
	for _, tc := range []struct {
		name                string
		flushedTo, written  int64
		leastPages          int
		firstPhy, dispatchd int64
		want                bool
	}{
		{"nothing unsynced", 10, 10, 2, 0, 0, false},
		{"nothing unsynced, thorough", 10, 10, 0, 0, 0, false},
		{"thorough syncs any unsynced entry", 10, 11, 0, 5000, 5000, true},
		{"a few entries, recent", 10, 20, 2, 5000, 6000, false},
		{"one page boundary crossed", 0, perPage + 1, 2, 0, 1000, false},
		{"two page boundaries crossed", 0, 2*perPage + 2, 2, 0, 1000, true},
		{"boundaries count, not entries: 2 entries across one", perPage, perPage + 2, 1, 0, 1000, true},
		{"one least page, none crossed", 1, 100, 1, 0, 1000, false},
		{"lagging by the bound exactly", 10, 20, 2, 1000, 1000 + cqFlushLagMax, false},
		{"lagging past the bound", 10, 20, 2, 1000, 1001 + cqFlushLagMax, true},
		{"unreadable first entry counts as lagging", 10, 20, 2, 0, cqFlushLagMax + 1, true},
	} {
		if got := cqFlushDue(tc.flushedTo, tc.written, tc.leastPages, tc.firstPhy, tc.dispatchd); got != tc.want {
			t.Errorf("%s: cqFlushDue(%d, %d, %d, %d, %d) = %v, want %v", tc.name, tc.flushedTo, tc.written, tc.leastPages, tc.firstPhy, tc.dispatchd, got, tc.want)
		}
	}
}
