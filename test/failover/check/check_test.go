package check

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every testdata history states the verdict it must get: the clean ones
// pass, and each violation is seen (so a checker that goes blind fails
// here, not in a fault run).
func TestHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata histories: %v", err)
	}
	kinds := map[string]bool{}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Want == nil {
				t.Fatal("no want")
			}
			r := Check(f.History)
			if got := r.Counts(); got != *f.Want {
				t.Fatalf("counts %+v, want %+v\n%s", got, *f.Want, r)
			}
			w := f.Want
			if fail := w.Lost+w.Order+w.SplitBrain > 0; r.Failed() != fail {
				t.Fatalf("Failed() = %v, want %v\n%s", r.Failed(), fail, r)
			}
			for k, n := range map[string]int{"lost": w.Lost, "order": w.Order, "split": w.SplitBrain, "dup": w.Duplicates} {
				if n > 0 {
					kinds[k] = true
				}
			}
			if r.Failed() && !strings.Contains(r.String(), "\n  ") {
				t.Fatalf("a failing report spells out its violations:\n%s", r)
			}
		})
	}
	for _, k := range []string{"lost", "order", "split", "dup"} {
		if !kinds[k] {
			t.Errorf("no testdata history shows %s", k)
		}
	}
}

func TestViolationsNamed(t *testing.T) {
	for file, want := range map[string]string{
		"order_offset_conflict": "offset 1 holds k2 and x1",
		"order_producer":        "producer p1 on fo-a/0: send 2 (k2) acknowledged at offset 3, not after send 1 (k1) at 5",
		"order_consumer":        "consumer c1 on fo-a/0 was handed j1 at offset 3 after offset 5",
		"split_epoch":           "fo-a epoch 2 acknowledged by 127.0.0.1:20001 and 127.0.0.1:20011",
		"split_overlap":         "127.0.0.1:20001 acknowledged k3",
		"truncated_tail":        "lost: k3 at fo-a/0@2",
	} {
		f, err := ReadFile(filepath.Join("testdata", file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if s := Check(f.History).String(); !strings.Contains(s, want) {
			t.Errorf("%s: report does not say %q:\n%s", file, want, s)
		}
	}
}

func TestFailoverTimeAndTable(t *testing.T) {
	f, err := ReadFile("testdata/failover_ok.json")
	if err != nil {
		t.Fatal(err)
	}
	d, by, ok := FailoverTime(f.Faults[0], f.History.Sends)
	if !ok || d != 6500*time.Millisecond || by != "127.0.0.1:20011" {
		t.Fatalf("failover %v by %s ok %v, want 6.5s by 127.0.0.1:20011", d, by, ok)
	}
	// The other broker set's sends and the old master's never count.
	g := f.Faults[0]
	g.Broker = "fo-c"
	if _, _, ok := FailoverTime(g, f.History.Sends); ok {
		t.Fatal("a failover found in a broker set with no sends")
	}
	faults := append(f.Faults, Fault{Kind: "restart slave", Broker: "fo-a", At: f.Faults[0].At})
	tab := Table(faults, f.History.Sends)
	for _, want := range []string{"kill -9 master", "6.5s", "restart slave", "all"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for p, want := range map[float64]time.Duration{50: 3, 100: 5, 1: 1, 90: 5} {
		if got := Percentile(ds, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("p50 of nothing")
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	var r Recorder
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Sent(Send{Key: "k1", Broker: "fo-a", Addr: "a", Epoch: 1, SentAt: at, AckedAt: at})
	r.Delivered(Delivery{Key: "k1", Broker: "fo-a"})
	r.Faulted(Fault{Kind: "kill -9 master", At: at, Failover: true})
	path := filepath.Join(t.TempDir(), "h.json")
	if err := WriteFile(path, File{History: r.History(), Faults: r.Faults()}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.History.Sends) != 1 || len(f.History.Deliveries) != 1 || len(f.Faults) != 1 || !f.History.Sends[0].AckedAt.Equal(at) {
		t.Fatalf("round trip: %+v", f)
	}
	if rep := Check(f.History); rep.Failed() {
		t.Fatalf("clean history failed: %s", rep)
	}
}
