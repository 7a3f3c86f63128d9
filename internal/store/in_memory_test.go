package store

import "testing"

func TestSlowRead(t *testing.T) {
	const gib = int64(1) << 30
	cases := []struct {
		name                       string
		maxPhy, lastPulled, memTot int64
		ratio                      int
		want                       bool
	}{
		{"at the end", 10 * gib, 10 * gib, 16 * gib, 40, false},
		{"just inside 40% of 16 GiB", 10 * gib, 10*gib - 6399*gib/1000, 16 * gib, 40, false},
		{"exactly the window", 8 * gib, 8*gib - memoryWindowOf(16*gib, 40), 16 * gib, 40, false},
		{"one byte past the window", 8 * gib, 8*gib - memoryWindowOf(16*gib, 40) - 1, 16 * gib, 40, true},
		{"far behind", 100 * gib, gib, 16 * gib, 40, true},
		{"nothing examined, small log", 1 << 20, 0, 16 * gib, 40, false},
		{"nothing examined, log beyond the window", 7 * gib, 0, 16 * gib, 40, true},
		{"ratio 100", 16 * gib, 0, 16 * gib, 100, false},
		{"ratio 0: anything behind the end", 100, 99, 16 * gib, 0, true},
		{"ratio 0 at the end", 100, 100, 16 * gib, 0, false},
		{"unknown memory", 100, 99, 0, 40, true},
	}
	for _, c := range cases {
		if got := SlowRead(c.maxPhy, c.lastPulled, c.memTot, c.ratio); got != c.want {
			t.Errorf("%s: SlowRead(%d, %d, %d, %d) = %v, want %v", c.name, c.maxPhy, c.lastPulled, c.memTot, c.ratio, got, c.want)
		}
	}
	if w := memoryWindowOf(16*gib, 40); w != 16*gib*40/100 {
		t.Errorf("window of 16 GiB at 40%% = %d, want %d", w, 16*gib*40/100)
	}
}
