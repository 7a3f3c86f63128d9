// Package stats owns the store's runtime figures: lock-free counters, a
// microsecond latency histogram, RocketMQ's PAGECACHERT put-latency
// distribution with its per-minute log line, putTps-style moving rates, and
// the Java number formats RocketMQ prints its runtime figures in
// (Double.toString, Float.toString, String.format("%.Nf"),
// humanReadableByteCount).
//
// It must never block a caller on the hot path: Record, Add and the Record*
// methods of StoreStats are a few atomic operations, never a lock, a channel
// or an allocation. Anything that takes a lock (the rate samplers) runs only
// from the once-a-second Tick driven by a background goroutine.
//
// Histogram buckets (log-linear, values in microseconds, 64 sub-buckets per
// power of two, relative error below 1.6 %):
//
//	index  0 .. 63   value v = index                      (exact, 0..63 µs)
//	index 64 .. 127  v in [64, 128)   step 1 µs
//	index 128.. 191  v in [128, 256)  step 2 µs
//	...              each further group of 64 doubles the range and the step
//	last index       v >= 2^27 µs (about 134 s): clamped, exact max kept aside
//
// PAGECACHERT buckets (milliseconds, as RocketMQ's StoreStatsService):
//
//	[<=0ms] [0~10ms] [10~50ms] [50~100ms] [100~200ms] [200~500ms] [500ms~1s]
//	[1~2s] [2~3s] [3~4s] [4~5s] [5~10s] [10s~]
//
// and the line printed once a minute with the counts of that minute:
//
//	[PAGECACHERT] TotalPut 12, PutMessageDistributeTime [<=0ms]:10 [0~10ms]:2 ... [10s~]:0
//
// (every bucket is followed by one space, the last one too, as RocketMQ
// prints it).
package stats
