package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
)

// TestTruncationLowersTimerAndTransactionState: a CommitLog truncation
// (a role change) reaches the timer wheel, which remembers the cut
// durably, and the transaction index, which drops the halves past it.
func TestTruncationLowersTimerAndTransactionState(t *testing.T) {
	env := startBroker(t, nil)
	b := env.b
	st, ok := b.store.(*store.DefaultMessageStore)
	if !ok || b.wheel() == nil {
		t.Fatalf("store %T, timers %v", b.store, b.wheel() != nil)
	}
	put := func(body string) store.PutResult {
		ch := make(chan store.PutResult, 1)
		b.store.PutMessage(&message.Inner{Topic: "T", Body: []byte(body), Properties: map[string]string{},
			BornHost: message.Addr{IP: []byte{127, 0, 0, 1}, Port: 1}, StoreHost: message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911}},
			func(r store.PutResult) { ch <- r })
		r := <-ch
		if r.Status != store.PutOK {
			t.Fatalf("put: %+v", r)
		}
		return r
	}
	put("kept")
	cut := st.MaxPhyOffset()
	r := put("cut")
	b.txCheck.Index().Add(&transaction.PendingHalf{QueueOffset: 7, Phy: r.WroteOffset, Size: 100, Group: "pg"})
	b.txCheck.Index().Add(&transaction.PendingHalf{QueueOffset: 6, Phy: 0, Size: 100, Group: "pg"})
	if _, err := st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.txCheck.Index().Get(7); ok {
		t.Fatal("a half past the cut is still pending")
	}
	if b, err := os.ReadFile(filepath.Join(env.scfg.StorePathRootDir, "timercut")); err != nil || len(b) == 0 {
		t.Fatalf("the timer wheel did not remember the cut: %q %v", b, err)
	}
}
