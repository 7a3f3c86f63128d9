package broker

import (
	"os"
	"strconv"
	"testing"
)

// Runtime info carries Spool's memory figures in bytes: RssAnon where
// /proc has it, the Go heap and the soft limit in force.
func TestRuntimeInfoMemoryFigures(t *testing.T) {
	e := startBroker(t, nil)
	info := e.runtimeInfo()
	num := func(k string) int64 {
		v, err := strconv.ParseInt(info[k], 10, 64)
		if err != nil {
			t.Errorf("%s = %q: %v", k, info[k], err)
		}
		return v
	}
	if _, err := os.Stat("/proc/self/status"); err == nil && num("rssAnon") <= 0 {
		t.Errorf("rssAnon = %q on a system with /proc", info["rssAnon"])
	}
	if num("heapInuse") <= 0 || num("heapSys") < num("heapInuse") || num("goMemoryLimit") <= 0 {
		t.Errorf("heap figures: heapInuse %q heapSys %q goMemoryLimit %q", info["heapInuse"], info["heapSys"], info["goMemoryLimit"])
	}
	for _, k := range []string{"heapIdle", "heapReleased", "memoryReleases"} {
		if num(k) < 0 {
			t.Errorf("%s = %q", k, info[k])
		}
	}
}
