package mempolicy

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// ReleaseConfig sets when free heap memory goes back to the OS.
type ReleaseConfig struct {
	// QuietRate is the allocation rate (bytes per second) below which the
	// process counts as quiet; at or above it, as busy.
	QuietRate float64
	// QuietFor is how long a quiet spell must last after a busy one.
	QuietFor time.Duration
	// MinReclaim is the least memory a release must be able to return
	// (the heap's free bytes and the garbage above the last live heap).
	MinReclaim uint64
	// MinInterval separates two releases.
	MinInterval time.Duration
}

// DefaultRelease is the driver's policy: two quiet seconds (under 1 MiB
// allocated a second) after a busy spell, 8 MiB to gain, at most one
// release every 10 seconds.
var DefaultRelease = ReleaseConfig{QuietRate: 1 << 20, QuietFor: 2 * time.Second, MinReclaim: 8 << 20, MinInterval: 10 * time.Second}

// Sample is one reading of the runtime's heap.
type Sample struct {
	At time.Time
	// AllocBytes is the cumulative count of bytes allocated.
	AllocBytes uint64
	// Reclaimable is what a forced collection and scavenge would return:
	// free heap not yet released plus heap objects above the live heap of
	// the last collection.
	Reclaimable uint64
}

// Releaser decides, sample by sample, when to return memory: after a busy
// spell, once the process has been quiet for QuietFor, when at least
// MinReclaim would come back and MinInterval has passed since the last
// release. The start of the process counts as a busy spell. It does no
// I/O; Observe's true means "call debug.FreeOSMemory now".
type Releaser struct {
	cfg         ReleaseConfig
	last        Sample
	started     bool
	burst       bool
	quietSince  time.Time
	lastRelease time.Time
}

// NewReleaser returns a releaser with cfg.
func NewReleaser(cfg ReleaseConfig) *Releaser { return &Releaser{cfg: cfg, burst: true} }

// Observe takes the next sample and reports whether to release now.
func (r *Releaser) Observe(s Sample) bool {
	if !r.started {
		r.started, r.last, r.quietSince = true, s, s.At
		return false
	}
	dt := s.At.Sub(r.last.At)
	if dt <= 0 {
		return false
	}
	rate := float64(s.AllocBytes-r.last.AllocBytes) / dt.Seconds()
	if s.AllocBytes < r.last.AllocBytes {
		rate = 0
	}
	r.last = s
	if rate >= r.cfg.QuietRate {
		r.burst = true
		r.quietSince = time.Time{}
		return false
	}
	if r.quietSince.IsZero() {
		r.quietSince = s.At
	}
	if !r.burst || s.At.Sub(r.quietSince) < r.cfg.QuietFor || s.Reclaimable < r.cfg.MinReclaim {
		return false
	}
	if !r.lastRelease.IsZero() && s.At.Sub(r.lastRelease) < r.cfg.MinInterval {
		return false
	}
	r.burst = false
	r.lastRelease = s.At
	return true
}

var releases atomic.Int64

// Releases is how many times the driver returned memory to the OS.
func Releases() int64 { return releases.Load() }

var sampleNames = []string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
}

// ReadSample reads a sample from runtime/metrics (no stop of the world).
func ReadSample(now time.Time) Sample {
	ms := make([]metrics.Sample, len(sampleNames))
	for i, n := range sampleNames {
		ms[i].Name = n
	}
	metrics.Read(ms)
	u := func(i int) uint64 {
		if ms[i].Value.Kind() == metrics.KindUint64 {
			return ms[i].Value.Uint64()
		}
		return 0
	}
	s := Sample{At: now, AllocBytes: u(0), Reclaimable: u(1)}
	if objs, live := u(2), u(3); objs > live {
		s.Reclaimable += objs - live
	}
	return s
}

// Run samples the heap once a second and returns memory to the OS when
// the releaser says so, until stop is closed.
func Run(stop <-chan struct{}, cfg ReleaseConfig) {
	r := NewReleaser(cfg)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if r.Observe(ReadSample(now)) {
				debug.FreeOSMemory()
				releases.Add(1)
			}
		}
	}
}

// Figures are the heap and resident figures runtime info reports.
type Figures struct {
	RSSAnon      int64 // bytes; 0 where /proc is missing
	HeapInuse    uint64
	HeapIdle     uint64
	HeapReleased uint64
	HeapSys      uint64
	MemoryLimit  int64
	Releases     int64
}

// ReadFigures reads the figures (runtime.ReadMemStats: a short stop of the
// world, so not for hot paths).
func ReadFigures() Figures {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ := RSSAnon()
	return Figures{RSSAnon: rss, HeapInuse: ms.HeapInuse, HeapIdle: ms.HeapIdle, HeapReleased: ms.HeapReleased,
		HeapSys: ms.HeapSys, MemoryLimit: debug.SetMemoryLimit(-1), Releases: Releases()}
}
