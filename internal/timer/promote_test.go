package timer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/vfs"
)

// A slave promoted to master has its master's CommitLog but no wheel file
// or timer log of its own. Started from the checkpoint it copied
// (GET_TIMER_CHECK_POINT), it delivers every pending timer exactly once
// and none its master had delivered, searching for delivery markers only
// from the checkpoint's scanFrom.
func TestPromotedSlaveStartsFromTheCopiedCheckpoint(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 9))
	h := newHarness(t, vfs.OS())
	svc := h.start(nil)
	for i := range 40 {
		h.schedule("early"+strconv.Itoa(i), 500+rnd.Int64N(3000), rnd)
	}
	for i := range 40 {
		h.schedule("late"+strconv.Itoa(i), 20_000+rnd.Int64N(5000), rnd)
	}
	h.advance(6 * time.Second) // the early ones are delivered
	if err := svc.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ck, ok := svc.LastCheckpoint()
	if !ok || !ck.HasScanFrom || ck.ScanFrom == 0 {
		t.Fatalf("checkpoint %+v, %v", ck, ok)
	}
	// The copy travels as the GET_TIMER_CHECK_POINT body.
	copied, err := DecodeWireCheckpoint(ck.Encode())
	if err != nil {
		t.Fatal(err)
	}
	svc.kill()
	// The slave never ran a wheel: no wheel file, no timer log.
	if err := os.Remove(filepath.Join(h.root, "timerwheel")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(h.root, "timerlog")); err != nil {
		t.Fatal(err)
	}
	svc = h.start(func(c *Config) { c.MasterCheckpoint = &copied })
	defer svc.Close()
	h.advance(30 * time.Second)
	h.checkExactlyOnce()
	if s := svc.Stats(); s.Pending != 0 || s.SkippedDelivered < 40 {
		t.Fatalf("stats after the promotion: %+v (want nothing pending, the 40 delivered timers skipped)", s)
	}
}
