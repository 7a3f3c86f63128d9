// Package incidents replays, as tests, the production incidents Spool was
// designed against (the field reports behind its design rules): a slow fsync
// under the log lock (on one broker, and on a SYNC_MASTER with its slave),
// a stalled CommitLog file allocation, a cold-read storm, a send-queue
// overload and a transaction check-back storm. Each scenario measures a
// no-fault baseline in the same run and compares.
//
// The package owns only tests. It must never reach into another package's
// internals: it drives a broker through the remoting protocol, injects
// faults through the store's file-system seam (internal/vfs.FaultFS) and
// reads the store's own counters (store.Stats).
//
// Two forms:
//
//	go test ./test/incidents/                          short form, ≤ 15 s per scenario;
//	                                                   asserts invariants from counters and
//	                                                   answer codes, logs the ratios
//	go test -tags incidents -p 1 -v ./test/incidents/  timed form, three runs per scenario,
//	                                                   asserts the ratio targets on medians
//	                                                   (no race detector)
//
// The rig of every scenario:
//
//	generator goroutines, or a child          test process
//	process at GOMAXPROCS=1 (overload)     +--------------------------------+
//	  SEND_MESSAGE_V2 ------------------>  | broker on 127.0.0.1:0          |
//	  PULL_MESSAGE    ------------------>  |   store.DefaultMessageStore    |
//	  GET_ROUTEINFO_BY_TOPIC --> name      |     vfs.FaultFS (faults) or OS |
//	  server on 127.0.0.1:0                +--------------------------------+
//
// The overload child receives its plan in the environment variable
// SPOOL_INCIDENT_CHILD_PLAN (JSON) and prints one line back:
//
//	INCIDENT-REPORT {"ladder":[...],"capacity":...,"overload_a":{...},...}
package incidents
