package timer

import (
	"github.com/spoolmq/spool/internal/store/stats"
)

// Stats are the service's runtime figures.
type Stats struct {
	// Pending is the number of accepted timers not yet delivered (including
	// those whose records are still being linked in).
	Pending int64
	// Scheduled counts timer messages accepted by Prepare/Schedule.
	Scheduled int64
	// Delivered counts timers whose real message the store acknowledged.
	Delivered int64
	// RejectedIllegal and RejectedFlowControl count refusals
	// (MESSAGE_ILLEGAL and SYSTEM_ERROR answers).
	RejectedIllegal     int64
	RejectedFlowControl int64
	// Lost counts timers whose record was gone from the CommitLog when due
	// (retention shorter than the delay, or a lost unflushed tail).
	Lost int64
	// Dropped counts timers the store refused for good (MESSAGE_ILLEGAL).
	Dropped int64
	// Retries counts deliveries tried again after a retryable failure.
	Retries int64
	// Rolled counts timers re-linked for a later round of the wheel.
	Rolled int64
	// SkippedDelivered counts timers found already delivered by the
	// recovery scan, or, on a broker started from its master's copied
	// checkpoint, due before it (duplicates avoided).
	SkippedDelivered int64
	// Cancelled counts timers not delivered because a delete marker
	// (TIMER_DEL_UNIQKEY) of their second named them; DeleteMarkers counts
	// the markers themselves, which are never delivered.
	Cancelled     int64
	DeleteMarkers int64
	// Malformed counts unreadable records of the timer topic; Corrupt
	// counts timer-log or CommitLog read failures.
	Malformed int64
	Corrupt   int64
	// Lateness is the histogram of (delivery time - due time).
	Lateness stats.HistogramSnapshot
	// Cursor is the second the wheel is delivering; EnqueueOffset the next
	// consume-queue offset of Topic to link; LogEnd the timer log's size.
	Cursor        int64
	EnqueueOffset int64
	LogEnd        int64
	// Recovering is set until the recovery scan is done.
	Recovering bool
	// Checkpoints counts wheel files written; LastCheckpointMs is the time
	// of the last one; CheckpointError is set once checkpoints stopped.
	Checkpoints      int64
	LastCheckpointMs int64
	CheckpointError  string
}

// Stats returns the runtime figures.
func (s *Service) Stats() Stats {
	out := Stats{
		Pending: s.pending.Load(), Scheduled: s.c.scheduled.Load(), Delivered: s.c.delivered.Load(),
		RejectedIllegal: s.c.rejectedIllegal.Load(), RejectedFlowControl: s.c.rejectedFlow.Load(),
		Lost: s.c.lost.Load(), Dropped: s.c.dropped.Load(), Retries: s.c.retries.Load(), Rolled: s.c.rolled.Load(),
		SkippedDelivered: s.c.skipped.Load(), Cancelled: s.c.cancelled.Load(), DeleteMarkers: s.c.markers.Load(), Malformed: s.c.malformed.Load(), Corrupt: s.c.corrupt.Load(),
		Lateness: s.lateness.Snapshot(), Recovering: s.recovering.Load(),
		Checkpoints: s.c.checkpoints.Load(), LastCheckpointMs: s.ckLast.Load(),
	}
	if p := s.ckErr.Load(); p != nil {
		out.CheckpointError = *p
	}
	if s.log != nil {
		out.LogEnd = s.log.end.Load()
	}
	s.mu.Lock()
	if s.w != nil {
		out.Cursor, out.EnqueueOffset = s.w.cursor, s.w.enqOffset
	}
	s.mu.Unlock()
	return out
}
