package check

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Fault is one fault the suite injected.
type Fault struct {
	// Kind names the fault ("kill -9 master", "SIGSTOP master", ...).
	Kind string `json:"kind"`
	// Broker is the broker set it hit and Master the address of its
	// master when it began.
	Broker string `json:"broker"`
	Master string `json:"master"`
	// At is when the fault began.
	At time.Time `json:"at"`
	// Failover is set for faults that must move the master elsewhere:
	// their failover time is measured.
	Failover bool `json:"failover"`
}

// FailoverTime is the time from a fault's start to the first send
// acknowledged by another broker of its set that started after the fault
// began; ok is false when no such send exists.
func FailoverTime(f Fault, sends []Send) (d time.Duration, by string, ok bool) {
	var best *Send
	for i := range sends {
		s := &sends[i]
		if s.Broker != f.Broker || s.Addr == f.Master || s.AckedAt.Before(f.At) {
			continue
		}
		if best == nil || s.AckedAt.Before(best.AckedAt) {
			best = s
		}
	}
	if best == nil {
		return 0, "", false
	}
	return best.AckedAt.Sub(f.At), best.Addr, true
}

// Percentile is the p-th percentile (0 < p <= 100) of ds by the nearest
// rank; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(s) {
		rank = len(s) - 1
	}
	return s[rank]
}

// Table is the printed figures: per fault kind, how many ran, how many
// failed over, and the failover time's p50 and max.
func Table(faults []Fault, sends []Send) string {
	kinds := []string{}
	by := map[string][]time.Duration{}
	count := map[string]int{}
	missing := map[string]int{}
	for _, f := range faults {
		if count[f.Kind] == 0 {
			kinds = append(kinds, f.Kind)
		}
		count[f.Kind]++
		if !f.Failover {
			continue
		}
		if d, _, ok := FailoverTime(f, sends); ok {
			by[f.Kind] = append(by[f.Kind], d)
		} else {
			missing[f.Kind]++
		}
	}
	var all []time.Duration
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %6s %10s %10s %10s\n", "fault", "runs", "failovers", "p50", "max")
	row := func(name string, runs int, ds []time.Duration, miss int) {
		p50, max := "-", "-"
		if len(ds) > 0 {
			p50 = Percentile(ds, 50).Round(time.Millisecond).String()
			max = Percentile(ds, 100).Round(time.Millisecond).String()
		}
		fo := fmt.Sprint(len(ds))
		if miss > 0 {
			fo += fmt.Sprintf(" (%d none)", miss)
		}
		fmt.Fprintf(&b, "%-34s %6d %10s %10s %10s\n", name, runs, fo, p50, max)
	}
	for _, k := range kinds {
		row(k, count[k], by[k], missing[k])
		all = append(all, by[k]...)
	}
	row("all", len(faults), all, 0)
	return b.String()
}

// Recorder collects a history from concurrent producers and consumers.
type Recorder struct {
	mu sync.Mutex
	h  History
	f  []Fault
}

// Sent records an acknowledged send.
func (r *Recorder) Sent(s Send) {
	r.mu.Lock()
	r.h.Sends = append(r.h.Sends, s)
	r.mu.Unlock()
}

// Delivered records a delivery.
func (r *Recorder) Delivered(d Delivery) {
	r.mu.Lock()
	r.h.Deliveries = append(r.h.Deliveries, d)
	r.mu.Unlock()
}

// SetFinal names the consumer of the final read (History.Final).
func (r *Recorder) SetFinal(consumer string) {
	r.mu.Lock()
	r.h.Final = consumer
	r.mu.Unlock()
}

// Faulted records a fault.
func (r *Recorder) Faulted(f Fault) {
	r.mu.Lock()
	r.f = append(r.f, f)
	r.mu.Unlock()
}

// History returns a copy of what was recorded.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History{
		Sends:      append([]Send(nil), r.h.Sends...),
		Deliveries: append([]Delivery(nil), r.h.Deliveries...),
		Final:      r.h.Final,
	}
}

// Faults returns a copy of the faults recorded.
func (r *Recorder) Faults() []Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Fault(nil), r.f...)
}

// File is a history file: the history, the faults and, in testdata, the
// verdict expected of it.
type File struct {
	History History `json:"history"`
	Faults  []Fault `json:"faults,omitempty"`
	Want    *Counts `json:"want,omitempty"`
}

// Counts are a report's figures, as a testdata file states them.
type Counts struct {
	Lost       int `json:"lost"`
	Duplicates int `json:"duplicates"`
	Unacked    int `json:"unacked"`
	Order      int `json:"order"`
	SplitBrain int `json:"splitBrain"`
}

// Counts returns r's figures.
func (r Report) Counts() Counts {
	return Counts{Lost: len(r.Lost), Duplicates: r.Duplicates, Unacked: r.Unacked, Order: len(r.Order), SplitBrain: len(r.SplitBrain)}
}

// ReadFile reads a history file.
func ReadFile(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// WriteFile writes a history file.
func WriteFile(path string, f File) error {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
