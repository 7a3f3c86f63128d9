package mempolicy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Limit policy: without GOMEMLIMIT in the environment, a server's soft
// memory limit is LimitFraction of the memory it may use, the smaller of
// its cgroup's limit and the machine's physical memory, never less than
// MinLimit. The rest is left to the page cache, which holds the CommitLog's
// hot data and is worth more to a broker than a larger Go heap. The limit
// is soft: the collector works harder near it, it never fails an
// allocation.
const (
	LimitFraction = 0.5
	MinLimit      = 64 << 20
)

// DefaultLimit returns the limit to set and true, or false when the
// environment's GOMEMLIMIT (env, "" when unset) already decides, or when
// neither the cgroup limit nor the physical memory is known (values <= 0;
// a cgroup without a limit is passed as 0).
func DefaultLimit(env string, cgroupMax, memTotal int64) (int64, bool) {
	if strings.TrimSpace(env) != "" {
		return 0, false
	}
	avail := int64(0)
	for _, v := range []int64{cgroupMax, memTotal} {
		if v > 0 && (avail == 0 || v < avail) {
			avail = v
		}
	}
	if avail <= 0 {
		return 0, false
	}
	return max(int64(float64(avail)*LimitFraction), MinLimit), true
}

// ApplyLimit sets the default limit when GOMEMLIMIT is unset and returns
// the limit in force (math.MaxInt64 when there is none) and whether it was
// set here.
func ApplyLimit() (limit int64, set bool) {
	if l, ok := DefaultLimit(os.Getenv("GOMEMLIMIT"), cgroupMemoryMax(), memTotal()); ok {
		debug.SetMemoryLimit(l)
		return l, true
	}
	return debug.SetMemoryLimit(-1), false
}

// cgroupMemoryMax reads the memory limit of this process's cgroup (v2
// memory.max, else v1 memory.limit_in_bytes); 0 when there is none.
func cgroupMemoryMax() int64 {
	var paths []string
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok {
				paths = append(paths, filepath.Join("/sys/fs/cgroup", rest, "memory.max"))
			}
		}
	}
	paths = append(paths, "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, p := range paths {
		if v, ok := parseCgroupMax(readSmall(p)); ok {
			return v
		}
	}
	return 0
}

// parseCgroupMax parses a cgroup memory limit file: "max" and v1's
// page-rounded huge values mean no limit (0, true); false when the file is
// missing or unreadable.
func parseCgroupMax(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if s == "max" {
		return 0, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	if v >= 1<<62 { // v1 without a limit: 0x7FFFFFFFFFFFF000
		return 0, true
	}
	return v, true
}

// memTotal reads MemTotal from /proc/meminfo; 0 when unknown.
func memTotal() int64 {
	return procKiB(readSmall("/proc/meminfo"), "MemTotal:")
}

// RSSAnon reads this process's RssAnon from /proc/self/status, in bytes;
// false where the file or the line is missing.
func RSSAnon() (int64, bool) {
	v := procKiB(readSmall("/proc/self/status"), "RssAnon:")
	return v, v > 0
}

// procKiB finds "key <n> kB" in a /proc file and returns n KiB in bytes.
func procKiB(text, key string) int64 {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return n << 10
		}
	}
	return 0
}

func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(bytes.TrimRight(b, "\x00"))
}
