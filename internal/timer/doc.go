// Package timer is Spool's exact-time delivery of RocketMQ 5 timer
// messages (properties TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS):
// a persistent timing wheel of one-second slots whose lists live in an
// append-only timer log on disk, so a million pending timers cost a fixed
// few MB of heap (the slot array) and 32 bytes each on disk.
//
// The package owns Topic (rmq_sys_wheel_timer), the wheel file
// storePathRootDir/timerwheel and the timer log storePathRootDir/timerlog/.
// It must never deliver a message before its due time (slots are one
// second wide, but every timer is delivered only once the clock has
// reached its exact millisecond), never acknowledge a timer before the
// store has acknowledged its record, never take a lock on the produce path
// (Prepare reads atomics only) and never do its file syncs and renames
// anywhere but in its own background goroutines.
//
// # Flow
//
//	send path ──Prepare/Schedule──▶ CommitLog record in Topic, queue 0
//	                                  (REAL_TOPIC, REAL_QID, TIMER_OUT_MS = due ms)
//	                                        │ dispatch (consume queue of Topic)
//	                                        ▼
//	enqueue goroutine: read the consume queue from enqOffset, append one
//	  timer-log entry per record and make it the head of its slot's list
//	                                        │
//	                                        ▼
//	delivery goroutine: load the cursor's slot (walk its list), deliver each
//	  timer when now >= due (in due order), read the record, rebuild the real
//	  message, Deliver it with PropertyTimerSource = record offset; when the
//	  slot is empty and its second has begun, clear it and move the cursor
//	                                        │
//	checkpoint goroutine (timerFlushIntervalMs): sync the timer log, wait for
//	  the CommitLog flush, replace timerwheel atomically, remove timer-log
//	  files nothing references
//
// The wheel's state and every decision about it (where a timer is linked,
// what is due, when a slot is finished, what a checkpoint holds) are in
// one pure type, wheel (wheel.go): no goroutine, no clock read, no file
// I/O. The goroutines above are its drivers (enqueue.go, deliver.go,
// checkpoint.go): they read and write the timer log and the wheel file,
// deliver, and feed the wheel what they read. testdata/wheel holds its
// scenarios.
//
// A timer due at d belongs to slot (d/1000) mod slots. A timer whose
// second is at or before the cursor goes to the cursor's slot (and straight
// into the loaded slot's in-memory heap); a timer more than a wheel round
// ahead waits in its slot and is re-linked (rolled) when its slot comes
// round too early.
//
// # Timer record (a CommitLog record, as any message)
//
//	topic rmq_sys_wheel_timer, queue 0, tag code = due ms
//	properties: the producer's, plus REAL_TOPIC, REAL_QID,
//	            TIMER_OUT_MS = exact due time (Unix ms; RocketMQ stores it
//	            rounded down to timerPrecisionMs, Spool never rounds)
//
// The delivered message has the body, flag, sysFlag, born/store hosts,
// born time and reconsume times of the record; topic and queue from
// REAL_TOPIC/REAL_QID (both removed, as RocketMQ does); TIMER_DELIVER_MS,
// TIMER_DELAY_SEC, TIMER_DELAY_MS removed; TIMER_OUT_MS kept; WAIT=false;
// a fresh store time; and __TIMER_SRC = the timer record's CommitLog
// offset (the delivery marker).
//
// # Cancelling (TIMER_DEL_UNIQKEY, RECALL_MESSAGE)
//
// A timer message carrying TIMER_DEL_UNIQKEY = DeleteKey(real topic,
// UNIQ_KEY) is a delete marker: linked like any timer (into the slot of
// its due time, its entry flagged) and never delivered. Before a slot
// delivers anything the keys of its markers are known, and a timer due in
// the same second whose real topic and UNIQ_KEY a marker names is counted
// as cancelled instead of delivered (cancel.go). A marker must therefore
// be due in the second of the timer it cancels; the broker's
// RECALL_MESSAGE makes it due at the exact due time of the recall handle.
// Markers are walked again with their slot after a restart.
//
// # Timer log (timerlog/<20-digit start position>, mappedFileSizeTimerLog each)
//
// A position is a byte offset over the concatenated files; an entry never
// crosses a file end (the file size is a multiple of 32).
//
//	 0            4            8                    16                   24                   32
//	+------------+------------+--------------------+--------------------+--------------------+
//	| crc32 (4)  | size (4)   | prev position (8)  | CommitLog offset(8)| due ms (8)         |
//	+------------+------------+--------------------+--------------------+--------------------+
//	  crc32 IEEE of bytes 4..31; size = record size, bit 30 set for a
//	  delete marker; prev = previous entry of the same slot, -1 ends the list
//
//	slot 17 head ─▶ [pos 4096] ─prev─▶ [pos 992] ─prev─▶ [pos 64] ─prev─▶ -1
//
// # Wheel file (timerwheel, replaced whole: temp file, fsync, rename, fsync dir)
//
//	 0 magic "TIMW" (4) | 4 version 1 (4) | 8 slots (4) | 12 slot width ms = 1000 (4)
//	16 cursor second (8)            first second not fully delivered
//	24 scanFrom (8)                 CommitLog offset before every delivery of the cursor's slot
//	32 enqOffset (8)                next consume-queue offset of Topic to link
//	40 logEnd (8)                   valid, synced end of the timer log
//	48 files (4) | 52 non-empty slots (4) | 56 saved at ms (8)
//	64 files × { start (8) | live entries (8) }
//	   slots × { index (4) | count (4) | head position (8) }
//	   crc32 IEEE of everything before (4)
//
// # Checkpoint and recovery (exactly once across kill -9 and power loss)
//
// A checkpoint is one consistent image taken under the service's lock:
// cursor, scanFrom, enqOffset, logEnd, the non-empty slots and the live
// count of each timer-log file. It is written only after (1) the timer log
// is synced up to logEnd, and (2) the store reports the CommitLog flushed
// past both scanFrom (so every delivery of the slots before the cursor is
// durable) and the end of the last linked timer record (so no linked
// record can vanish with an unflushed tail). A failed sync stops all later
// checkpoints; the previous one stays valid.
//
// Deliveries happen only while the cursor is at the slot being delivered,
// and scanFrom is read from the store (MaxPhyOffset) when the cursor moves,
// before that slot's first delivery. So every delivery the last checkpoint
// does not count as done lies at or after its scanFrom in the CommitLog.
// Start therefore:
//
//  1. loads timerwheel (missing: a new wheel, cursor = now, enqOffset = 0,
//     scanFrom = the CommitLog start when Topic has records); a bad checksum
//     is corruption and Start fails naming the file;
//
//  2. sets the timer log's end to logEnd, so entries written after the
//     checkpoint are overwritten, and removes files past logEnd and files
//     with no live entry;
//
//  3. links again, from enqOffset, the timer records the consume queue holds
//     (the enqueue goroutine, within timerReadBytesPerSec);
//
//  4. reads the CommitLog from scanFrom to its end (within the same budget)
//     and collects every delivery marker (__TIMER_SRC, with TIMER_OUT_MS);
//
//  5. waits until every timer record the consume queue held at Start is
//     linked, and only then delivers, from the checkpoint's cursor: a timer whose
//     record offset and due time match a collected marker is counted as
//     delivered and skipped; every other due timer is delivered.
//
//  6. keeps scanFrom where it was until those markers can no longer match a
//     pending timer: the previous run delivered only from slots up to its
//     clock's second plus one, so scanFrom moves again once the cursor is
//     past the restart's second plus one (or every marker was matched).
//     Otherwise a checkpoint written while catching up would place scanFrom
//     after markers of slots still ahead of the cursor, and the next
//     recovery would deliver those timers again. (A clock that goes back
//     across a restart weakens this bound.)
//
// The progress file is thus never trusted alone: what happened after it is
// recomputed from the CommitLog. A timer whose record is gone when due
// (retention shorter than the delay, or lost with the store's unflushed
// tail) is counted in Stats.Lost.
//
// # Broker wiring
//
//	svc, _ := timer.New(cfg, store)  // after store.Start
//	svc.Start()
//	// send path, after the DELAY rewrite and the size checks, instead of PutMessage:
//	ok, err := svc.Schedule(msg, done) // err: answer timer.ResponseCode(err), remark err.Error()
//	if !ok && err == nil { store.PutMessage(msg, done) }
//	svc.Close()                      // before store.Shutdown
//
// Answers (as RocketMQ's SendMessageProcessor): out of range or malformed
// -> MESSAGE_ILLEGAL (13); flow control (timerCongestNumEachSlot) ->
// SYSTEM_ERROR (1); service not running -> SERVICE_NOT_AVAILABLE (14).
package timer
