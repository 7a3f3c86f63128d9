package timer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestWheelScenarios runs the scenario files in testdata/wheel against the
// pure wheel, with the timer log kept in memory by the test. Commands:
//
//	new slots=N cursor=SEC filesize=BYTES       a new, empty wheel
//	link [fail]                                 one timer a line: "due=MS phy=OFF size=N";
//	                                            fail: the timer-log write fails
//	tick now=MS [room=N] [fail=PHY,...] [maxphy=OFF] [fail-relink]
//	                                            the delivery loop until it would wait:
//	                                            deliveries listed; fail= are retried at now+1000
//	show                                        cursor, scanFrom, slots, file counts
//	congest n=N limit=N draw=D                  timerCongestNumEachSlot's verdict
//	checkpoint                                  take the image (the log is synced up to here)
//	crash                                       lose the wheel and the log past the image; rebuild
//	recover markers=PHY:DUE,... until=SEC        the markers the recovery scan found
func TestWheelScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/wheel", func(t *testing.T, path string) {
		h := &wheelHarness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type wheelHarness struct {
	w        *wheel
	log      []byte
	fileSize int64
	queue    int64 // consume-queue offsets linked
	img      *wheelImage
	pending  int64
	out      strings.Builder
}

func (h *wheelHarness) printf(format string, args ...any) { fmt.Fprintf(&h.out, format+"\n", args...) }

func (h *wheelHarness) run(t *testing.T, d *datadriven.TestData) string {
	h.out.Reset()
	arg := func(key string, def int64) int64 {
		for _, a := range d.CmdArgs {
			if a.Key == key {
				v, err := strconv.ParseInt(a.Vals[0], 10, 64)
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return v
			}
		}
		return def
	}
	switch d.Cmd {
	case "new":
		h.fileSize = arg("filesize", 1<<20)
		h.w, h.pending = newWheel(&wheelImage{slots: uint32(arg("slots", 8)), cursor: arg("cursor", 0)}, h.fileSize)
		h.log, h.queue, h.img = nil, 0, nil
		return "ok"
	case "link":
		var ts []slotEntry
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			var e slotEntry
			if _, err := fmt.Sscanf(line, "due=%d phy=%d size=%d", &e.due, &e.phy, &e.size); err != nil {
				d.Fatalf(t, "%q: %v", line, err)
			}
			ts = append(ts, e)
		}
		if err := h.link(ts, d.HasArg("fail")); err != nil {
			h.printf("write failed: nothing linked")
		} else {
			h.queue += int64(len(ts))
			h.w.enqueued(h.queue-1, ts)
		}
		h.show()
	case "tick":
		h.tick(t, d, arg("now", 0), int(arg("room", 256)), arg("maxphy", 0))
	case "show":
		h.show()
	case "congest":
		draws := 0
		rej := congested(arg("n", 0), arg("limit", 0), func() int { draws++; return int(arg("draw", 0)) })
		verdict := "accept"
		if rej {
			verdict = "reject"
		}
		if draws > 0 {
			verdict += " (drawn)"
		}
		return verdict
	case "checkpoint":
		img, need, dead := h.w.image(int64(len(h.log)), 0)
		h.img = img
		h.printf("image: cursor=%d scanFrom=%d enqOffset=%d logEnd=%d slots=%d files=%d", img.cursor, img.scanFrom,
			img.enqOffset, img.logEnd, len(img.heads), len(img.segs))
		h.printf("saved once the CommitLog is flushed to %d", need)
		sort.Slice(dead, func(i, j int) bool { return dead[i] < dead[j] })
		for _, start := range dead {
			if h.w.forgetFile(start) {
				h.printf("remove timer-log file %d", start)
			}
		}
	case "crash":
		if h.img == nil {
			d.Fatalf(t, "crash before any checkpoint")
		}
		lost := (int64(len(h.log)) - h.img.logEnd) / entrySize
		h.log = h.log[:h.img.logEnd]
		var existing []int64
		for start := int64(0); start < int64(len(h.log))+h.fileSize; start += h.fileSize {
			existing = append(existing, start)
		}
		h.w, h.pending = newWheel(h.img, h.fileSize)
		h.queue = h.img.enqOffset
		h.printf("restarted from the image: %d timers pending, %d timer-log entries past it dropped", h.pending, lost)
		for _, start := range h.w.staleFiles(existing, h.img.logEnd) {
			h.printf("remove timer-log file %d", start)
		}
		h.show()
	case "recover":
		found := map[int64]int64{}
		for _, a := range d.CmdArgs {
			if a.Key != "markers" {
				continue
			}
			for _, v := range a.Vals {
				p, due, _ := strings.Cut(v, ":")
				phy, err1 := strconv.ParseInt(p, 10, 64)
				dv, err2 := strconv.ParseInt(due, 10, 64)
				if err1 != nil || err2 != nil {
					d.Fatalf(t, "marker %q", v)
				}
				found[phy] = dv
			}
		}
		h.w.recovered(found, arg("until", 0))
		return fmt.Sprintf("%d markers, kept until the cursor passes second %d", len(found), arg("until", 0))
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return h.out.String()
}

// link is the enqueue driver over the in-memory log.
func (h *wheelHarness) link(ts []slotEntry, fail bool) error {
	pos0 := int64(len(h.log))
	buf, undo := h.w.link(ts, pos0)
	if fail {
		h.w.unlink(undo)
		return errors.New("write failed")
	}
	h.log = append(h.log, buf...)
	_, skipped := h.w.linked(ts, pos0)
	h.pending += int64(len(ts) - skipped)
	if skipped > 0 {
		h.printf("%d linked timers found delivered before the crash: skipped", skipped)
	}
	return nil
}

func (h *wheelHarness) walk(head int64) []walkedEntry {
	var out []walkedEntry
	for pos := head; pos != nilPos; {
		e, ok := decodeEntry(h.log[pos : pos+entrySize])
		if !ok {
			panic("bad entry")
		}
		out = append(out, walkedEntry{e, pos})
		pos = e.prev
	}
	return out
}

// tick is the delivery driver: deliveries complete at once (or fail).
func (h *wheelHarness) tick(t *testing.T, d *datadriven.TestData, now int64, room int, maxPhy int64) {
	fails := map[int64]bool{}
	for _, a := range d.CmdArgs {
		if a.Key == "fail" {
			for _, v := range a.Vals {
				p, _ := strconv.ParseInt(v, 10, 64)
				fails[p] = true
			}
		}
	}
	failRelink := d.HasArg("fail-relink")
	for range 1000 {
		c := h.w.load()
		if !c.walked {
			ents := h.walk(c.headSnap)
			skipped := h.w.walked(ents)
			h.pending -= int64(skipped)
			h.printf("load slot of second %d: %d entries, %d this round, %d later rounds, %d skipped as delivered",
				c.sec, len(ents), c.ready.Len(), len(c.rolled), skipped)
		}
		batch, next, finish := h.w.due(now, room, 0)
		if finish {
			rolled, u := h.w.finish()
			if len(rolled) > 0 {
				if err := h.link(rolled, failRelink); err != nil {
					h.w.unfinish(u)
					h.printf("re-linking %d rolled timers failed: second %d stays loaded", len(rolled), c.sec)
					return
				}
				h.printf("re-linked %d timers for a later round", len(rolled))
			}
			moveScan, dropped := h.w.finished(u)
			if dropped > 0 {
				h.printf("%d markers matching no pending timer dropped", dropped)
			}
			if moveScan {
				h.w.setScanFrom(maxPhy)
			}
			h.printf("finish second %d: cursor %d, scanFrom %d", c.sec, h.w.cursor, h.w.scanFrom)
			continue
		}
		if len(batch) == 0 {
			if next < 0 {
				next = c.sec * 1000
			}
			h.printf("wait until %d", next)
			return
		}
		for _, e := range batch {
			if fails[e.phy] {
				h.w.retry(e, now+retryDelayMs)
				h.printf("deliver phy=%d due=%d: failed, retry at %d", e.phy, e.due, now+retryDelayMs)
				continue
			}
			h.pending--
			h.printf("deliver phy=%d due=%d late=%dms", e.phy, e.due, now-e.due)
		}
		if len(batch) == room {
			h.printf("window full")
			return
		}
	}
	t.Fatal("tick did not settle")
}

// show prints the wheel: cursor, scanFrom, each non-empty slot's list
// (newest first) and the live entries of each timer-log file.
func (h *wheelHarness) show() {
	h.printf("cursor=%d scanFrom=%d enqOffset=%d pending=%d", h.w.cursor, h.w.scanFrom, h.w.enqOffset, h.pending)
	for i, head := range h.w.heads {
		if head == nilPos {
			continue
		}
		var items []string
		for _, e := range h.walk(head) {
			items = append(items, fmt.Sprintf("%d@%d", e.phy, e.due))
		}
		h.printf("slot %d (count %d): %s", i, h.w.counts[i].Load(), strings.Join(items, " -> "))
	}
	var starts []int64
	for s := range h.w.segLive {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	var files []string
	for _, s := range starts {
		files = append(files, fmt.Sprintf("%d:%d", s, h.w.segLive[s]))
	}
	if len(files) > 0 {
		h.printf("live entries per file: %s", strings.Join(files, " "))
	}
	if c := h.w.cur; c != nil {
		h.printf("loaded: second %d, %d ready, %d rolled", c.sec, c.ready.Len(), len(c.rolled))
	}
}
