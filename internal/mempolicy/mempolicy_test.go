package mempolicy

import (
	"testing"
	"time"
)

func TestDefaultLimit(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name              string
		env               string
		cgroup, mem, want int64
		ok                bool
	}{
		{"environment decides", "2GiB", 4 * gib, 8 * gib, 0, false},
		{"environment off decides too", "off", 4 * gib, 8 * gib, 0, false},
		{"cgroup below the machine", "", 4 * gib, 8 * gib, 2 * gib, true},
		{"machine below the cgroup", "", 16 * gib, 8 * gib, 4 * gib, true},
		{"no cgroup limit", "", 0, 8 * gib, 4 * gib, true},
		{"nothing known", "", 0, 0, 0, false},
		{"never below the floor", "", 96 << 20, 8 * gib, MinLimit, true},
		{"blank environment is unset", "  ", 0, 2 * gib, gib, true},
	} {
		got, ok := DefaultLimit(tc.env, tc.cgroup, tc.mem)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: DefaultLimit = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseCgroupMax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"max\n", 0, true}, {"1073741824\n", 1 << 30, true}, {"9223372036854771712\n", 0, true},
		{"", 0, false}, {"garbage", 0, false}, {"-1", 0, false},
	} {
		if got, ok := parseCgroupMax(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupMax(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestProcKiB(t *testing.T) {
	status := "Name:\tspool\nRssAnon:\t   5120 kB\nRssFile:\t9000 kB\n"
	if got := procKiB(status, "RssAnon:"); got != 5120<<10 {
		t.Errorf("RssAnon = %d", got)
	}
	if got := procKiB(status, "VmSwap:"); got != 0 {
		t.Errorf("missing key = %d", got)
	}
}

// step is one sample given to a releaser: seconds since the start, MiB
// allocated in total, MiB reclaimable, and whether it must release.
type step struct {
	sec     float64
	allocMB uint64
	reclMB  uint64
	release bool
}

func TestReleaser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"after start, once quiet", []step{
			{0, 10, 20, false}, {1, 10, 20, false}, {2, 10, 20, true}, {3, 10, 20, false}, {30, 10, 20, false},
		}},
		{"nothing to gain", []step{
			{0, 10, 4, false}, {1, 10, 4, false}, {2, 10, 4, false}, {5, 10, 4, false},
		}},
		{"busy, then two quiet seconds", []step{
			{0, 0, 0, false}, {1, 100, 50, false}, {2, 200, 90, false}, {3, 200, 90, false},
			{4, 200, 90, false}, {5, 200, 90, true}, {6, 200, 90, false},
		}},
		{"a second burst waits for the interval", []step{
			{0, 0, 0, false}, {1, 100, 50, false}, {2, 100, 50, false}, {3, 100, 50, false}, {4, 100, 50, true},
			{5, 300, 60, false}, {6, 300, 60, false}, {7, 300, 60, false}, {8, 300, 60, false},
			{13, 300, 60, false}, {14, 300, 60, true},
		}},
		{"trickle stays quiet, no release without a burst", []step{
			{0, 0, 30, false}, {1, 0, 30, false}, {2, 0, 30, true},
			{3, 0, 30, false}, {40, 0, 30, false}, {41, 0, 30, false},
		}},
		{"allocation resumes before quiet is long enough", []step{
			{0, 0, 0, false}, {1, 100, 40, false}, {2, 100, 40, false}, {3, 200, 40, false},
			{4, 200, 40, false}, {5, 200, 40, false}, {6, 200, 40, true},
		}},
	} {
		r := NewReleaser(DefaultRelease)
		start := time.Unix(1_700_000_000, 0)
		for i, s := range tc.steps {
			got := r.Observe(Sample{
				At:         start.Add(time.Duration(s.sec * float64(time.Second))),
				AllocBytes: s.allocMB << 20, Reclaimable: s.reclMB << 20,
			})
			if got != s.release {
				t.Errorf("%s: step %d (%.0fs): release %v, want %v", tc.name, i, s.sec, got, s.release)
			}
		}
	}
}

func TestReadSampleAndFigures(t *testing.T) {
	s := ReadSample(time.Now())
	if s.AllocBytes == 0 {
		t.Errorf("no allocation counted: %+v", s)
	}
	f := ReadFigures()
	if f.HeapInuse == 0 || f.MemoryLimit <= 0 {
		t.Errorf("figures %+v", f)
	}
}
