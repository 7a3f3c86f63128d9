// Package mempolicy is Spool's memory policy for its server processes: the
// GOMEMLIMIT default when the environment sets none, and the decision when
// to return the heap's free memory to the operating system after a burst
// (debug.FreeOSMemory), with the small driver that samples the runtime and
// acts on it, and the process's RssAnon and heap figures for runtime info.
//
// The rules are pure functions of their inputs (DefaultLimit, Releaser),
// tested from tables; the I/O (cgroup and /proc files, runtime/metrics,
// the ticker) stays in the driver. It imports nothing of Spool's and must
// never be imported by the store or the codecs: only the wiring and the
// command decide about the process's memory.
package mempolicy
