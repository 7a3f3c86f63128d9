package timer

import (
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// scheduleAt schedules key for topic T due exactly at due; expect says
// whether it is to be delivered (a delivery of an unexpected key counts
// as early in the harness).
func (h *harness) scheduleAt(key string, due int64, expect bool) {
	h.t.Helper()
	if expect {
		h.mu.Lock()
		h.due[key] = due
		h.mu.Unlock()
	}
	scheduleSync(h.t, h.svc, timerMsg(key, message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
}

// cancel schedules a delete marker for key, due at due.
func (h *harness) cancel(key string, due int64) {
	h.t.Helper()
	m := timerMsg("del-"+key, message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
	m.Properties[message.PropertyTimerDelUniqKey] = DeleteKey("T", key)
	scheduleSync(h.t, h.svc, m)
}

func (h *harness) checkCancelled(svc *Service, cancelled, markers int64) {
	h.t.Helper()
	waitFor(h.t, "everything handled", func() bool { return svc.Stats().Pending == 0 })
	h.checkNotEarly()
	h.checkExactlyOnce()
	if s := svc.Stats(); s.Cancelled != cancelled || s.DeleteMarkers != markers || s.Lost != 0 {
		h.t.Fatalf("stats: cancelled %d markers %d lost %d, want %d and %d: %+v", s.Cancelled, s.DeleteMarkers, s.Lost, cancelled, markers, s)
	}
}

// TestDeleteMarkerCancelsTimer: a TIMER_DEL_UNIQKEY message due with a
// timer cancels it and only it; the marker is never delivered.
func TestDeleteMarkerCancelsTimer(t *testing.T) {
	h := newHarness(t, vfs.OS())
	svc := h.start(nil)
	defer svc.Close()
	due := t0 + 3000
	h.scheduleAt("a", due, false)
	h.scheduleAt("b", due, true)
	h.scheduleAt("c", due+400, true)
	h.scheduleAt("d", due+1500, true)
	h.cancel("a", due)
	h.cancel("nobody", due) // names no timer: cancels nothing
	waitFor(t, "linked", func() bool { return svc.Stats().EnqueueOffset == 6 })
	h.advance(5 * time.Second)
	h.checkCancelled(svc, 1, 2)
}

// TestDeleteMarkerIntoLoadedSlot: a marker that arrives while its slot is
// being delivered (the timer not yet due) still cancels the timer.
func TestDeleteMarkerIntoLoadedSlot(t *testing.T) {
	h := newHarness(t, vfs.OS())
	svc := h.start(nil)
	defer svc.Close()
	sec := (t0/1000 + 2) * 1000
	due := sec + 900
	h.scheduleAt("a", due, false)
	h.scheduleAt("b", sec+100, true)
	waitFor(t, "linked", func() bool { return svc.Stats().EnqueueOffset == 2 })
	h.advance(time.Duration(sec+200-t0) * time.Millisecond) // b delivered: the slot is loaded
	waitFor(t, "slot loaded", func() bool { return svc.Stats().Cursor == sec/1000 })
	h.cancel("a", due)
	waitFor(t, "linked", func() bool { return svc.Stats().EnqueueOffset == 3 })
	h.advance(3 * time.Second)
	h.checkCancelled(svc, 1, 1)
}

// TestDeleteMarkerSurvivesRestart: after a restart (with and without a
// checkpoint) the marker is walked with its slot and still cancels.
func TestDeleteMarkerSurvivesRestart(t *testing.T) {
	for _, checkpoint := range []bool{true, false} {
		t.Run("checkpoint="+strconv.FormatBool(checkpoint), func(t *testing.T) {
			h := newHarness(t, vfs.OS())
			svc := h.start(nil)
			due := t0 + 4000
			h.scheduleAt("a", due, false)
			h.scheduleAt("b", due, true)
			h.cancel("a", due)
			waitFor(t, "linked", func() bool { return svc.Stats().EnqueueOffset == 3 })
			if checkpoint {
				if err := svc.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				if err := svc.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				svc.kill()
			}
			svc = h.start(nil)
			defer svc.Close()
			h.advance(6 * time.Second)
			h.checkCancelled(svc, 1, 1)
		})
	}
}
