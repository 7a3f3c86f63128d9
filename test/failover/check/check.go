// Package check is the fault suite's checker: a pure function of a
// recorded history (every acknowledged send, every delivery) that reports
// acknowledged messages that were lost, duplicate deliveries, per-queue
// order violations and acknowledgements by two masters in one epoch, plus
// the failover times of the faults the suite injected.
//
// It does no I/O but reading and writing history files, and imports
// nothing of Spool's: the harness (test/failover) records, this package
// judges, and its testdata holds a history for each violation so that a
// checker that stopped seeing one fails its own tests.
package check

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Send is one acknowledged send (SEND_OK) as the producer saw it.
type Send struct {
	// Key identifies the message across retries and redeliveries (the
	// harness puts it in the message's keys and body).
	Key string `json:"key"`
	// Producer and Seq order one producer's sends: Seq increases with
	// each send it starts, and a producer has one send in flight.
	Producer string `json:"producer,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
	// Broker is the broker name (the broker set), Queue the queue id and
	// Offset the queue offset the answer named.
	Broker string `json:"broker"`
	Queue  int    `json:"queue"`
	Offset int64  `json:"offset"`
	// Addr is the address of the broker that acknowledged and Epoch the
	// master epoch it was master in (0: unknown or not controller mode;
	// such sends are left out of the epoch checks).
	Addr  string `json:"addr"`
	Epoch int32  `json:"epoch,omitempty"`
	// SentAt is when the send started, AckedAt when its answer arrived.
	SentAt  time.Time `json:"sentAt"`
	AckedAt time.Time `json:"ackedAt"`
}

// Delivery is one message handed to a consumer.
type Delivery struct {
	Key      string `json:"key"`
	Consumer string `json:"consumer,omitempty"`
	Broker   string `json:"broker"`
	Queue    int    `json:"queue"`
	Offset   int64  `json:"offset"`
}

// History is what a run recorded, in the order it was recorded.
type History struct {
	Sends      []Send     `json:"sends"`
	Deliveries []Delivery `json:"deliveries"`
	// Final names the consumer whose deliveries are a read of every
	// queue from its start after the run. When set, an acknowledged send
	// is lost unless Final was handed it: a message a live consumer read
	// from a master that was then truncated away is still lost.
	Final string `json:"final,omitempty"`
}

// Report is the checker's verdict.
type Report struct {
	Acked     int // acknowledged sends
	Delivered int // deliveries
	Unique    int // distinct keys delivered
	// ByConsumer counts the deliveries to each consumer.
	ByConsumer map[string]int
	// Lost are acknowledged sends whose key was never delivered (must be
	// empty).
	Lost []Send
	// Duplicates counts deliveries beyond the first of each key (allowed,
	// counted: at-least-once delivery).
	Duplicates int
	// Unacked counts keys delivered that no acknowledgement names (a send
	// whose answer was lost, or a retry's first copy): allowed.
	Unacked int
	// Order lists per-queue order violations (must be empty): two keys at
	// one queue offset, one producer's acknowledged offsets not
	// increasing, a consumer handed a new message behind one it had seen.
	Order []string
	// SplitBrain lists acknowledgements by two masters in one epoch, or by
	// a deposed master after its successor acknowledged (must be empty).
	SplitBrain []string
}

// Failed reports whether the history breaks a guarantee.
func (r Report) Failed() bool {
	return len(r.Lost) > 0 || len(r.Order) > 0 || len(r.SplitBrain) > 0
}

// maxListed bounds the violations a report spells out; the counts stay
// exact.
const maxListed = 20

// String is the report for a test log.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acknowledged %d, delivered %d (%d distinct), lost %d, duplicates %d, delivered unacknowledged %d, order violations %d, two masters in one epoch %d",
		r.Acked, r.Delivered, r.Unique, len(r.Lost), r.Duplicates, r.Unacked, len(r.Order), len(r.SplitBrain))
	if len(r.ByConsumer) > 0 {
		names := make([]string, 0, len(r.ByConsumer))
		for n := range r.ByConsumer {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString("; deliveries by consumer:")
		for _, n := range names {
			fmt.Fprintf(&b, " %s %d", n, r.ByConsumer[n])
		}
	}
	for i, s := range r.Lost {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... %d more lost", len(r.Lost)-i)
			break
		}
		fmt.Fprintf(&b, "\n  lost: %s at %s/%d@%d acknowledged by %s epoch %d at %s", s.Key, s.Broker, s.Queue, s.Offset, s.Addr, s.Epoch, s.AckedAt.Format(time.RFC3339Nano))
	}
	for _, l := range [][]string{r.Order, r.SplitBrain} {
		for i, v := range l {
			if i == maxListed {
				fmt.Fprintf(&b, "\n  ... %d more", len(l)-i)
				break
			}
			b.WriteString("\n  ")
			b.WriteString(v)
		}
	}
	return b.String()
}

// queueKey names one queue of one broker set.
type queueKey struct {
	broker string
	queue  int
}

type slot struct {
	queueKey
	offset int64
}

// Check judges a history.
func Check(h History) Report {
	r := Report{Acked: len(h.Sends), Delivered: len(h.Deliveries)}
	delivered := map[string]int{}
	kept := map[string]bool{}
	r.ByConsumer = map[string]int{}
	for _, d := range h.Deliveries {
		delivered[d.Key]++
		r.ByConsumer[d.Consumer]++
		if h.Final == "" || d.Consumer == h.Final {
			kept[d.Key] = true
		}
	}
	r.Unique = len(delivered)
	acked := map[string]bool{}
	for _, s := range h.Sends {
		if !acked[s.Key] && !kept[s.Key] {
			r.Lost = append(r.Lost, s)
		}
		acked[s.Key] = true
	}
	for k, n := range delivered {
		r.Duplicates += n - 1
		if !acked[k] {
			r.Unacked++
		}
	}
	r.Order = orderViolations(h)
	r.SplitBrain = splitBrain(h.Sends)
	return r
}

// orderViolations checks each queue: one key per offset, each producer's
// acknowledged offsets increasing with its sends, and no consumer handed a
// message it had not seen at an offset below one it had.
func orderViolations(h History) []string {
	var out []string
	holders := map[slot][]string{}
	var slots []slot
	claim := func(sl slot, key string) {
		ks, ok := holders[sl]
		if !ok {
			slots = append(slots, sl)
		}
		for _, k := range ks {
			if k == key {
				return
			}
		}
		holders[sl] = append(ks, key)
	}
	for _, s := range h.Sends {
		claim(slot{queueKey{s.Broker, s.Queue}, s.Offset}, s.Key)
	}
	for _, d := range h.Deliveries {
		claim(slot{queueKey{d.Broker, d.Queue}, d.Offset}, d.Key)
	}
	for _, sl := range slots {
		if ks := holders[sl]; len(ks) > 1 {
			out = append(out, fmt.Sprintf("order: %s/%d offset %d holds %s", sl.broker, sl.queue, sl.offset, strings.Join(ks, " and ")))
		}
	}

	type stream struct {
		who string
		queueKey
	}
	byProducer := map[stream][]Send{}
	for _, s := range h.Sends {
		if s.Producer != "" {
			k := stream{s.Producer, queueKey{s.Broker, s.Queue}}
			byProducer[k] = append(byProducer[k], s)
		}
	}
	for _, k := range sortedStreams(byProducer) {
		ss := byProducer[k]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Seq < ss[j].Seq })
		for i := 1; i < len(ss); i++ {
			if ss[i].Offset <= ss[i-1].Offset {
				out = append(out, fmt.Sprintf("order: producer %s on %s/%d: send %d (%s) acknowledged at offset %d, not after send %d (%s) at %d",
					k.who, k.broker, k.queue, ss[i].Seq, ss[i].Key, ss[i].Offset, ss[i-1].Seq, ss[i-1].Key, ss[i-1].Offset))
			}
		}
	}

	type seen struct {
		max  int64
		keys map[string]bool
	}
	consumers := map[stream]*seen{}
	for _, d := range h.Deliveries {
		k := stream{d.Consumer, queueKey{d.Broker, d.Queue}}
		c := consumers[k]
		if c == nil {
			c = &seen{max: -1, keys: map[string]bool{}}
			consumers[k] = c
		}
		if !c.keys[d.Key] && d.Offset < c.max {
			out = append(out, fmt.Sprintf("order: consumer %s on %s/%d was handed %s at offset %d after offset %d",
				d.Consumer, d.Broker, d.Queue, d.Key, d.Offset, c.max))
		}
		c.keys[d.Key] = true
		if d.Offset > c.max {
			c.max = d.Offset
		}
	}
	return out
}

func sortedStreams[K interface{ comparable }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}

// splitBrain checks each broker set's epochs: one acknowledging address
// per epoch, and no acknowledgement in an epoch for a send that started
// after a later epoch's first acknowledgement had arrived (the deposed
// master answered after its successor did).
func splitBrain(sends []Send) []string {
	var out []string
	type ep struct {
		broker string
		epoch  int32
	}
	addrs := map[ep]map[string]bool{}
	first := map[ep]Send{}
	for _, s := range sends {
		if s.Epoch == 0 {
			continue
		}
		k := ep{s.Broker, s.Epoch}
		if addrs[k] == nil {
			addrs[k] = map[string]bool{}
		}
		addrs[k][s.Addr] = true
		if f, ok := first[k]; !ok || s.AckedAt.Before(f.AckedAt) {
			first[k] = s
		}
	}
	for _, k := range sortedStreams(addrs) {
		if len(addrs[k]) > 1 {
			var list []string
			for a := range addrs[k] {
				list = append(list, a)
			}
			sort.Strings(list)
			out = append(out, fmt.Sprintf("split brain: %s epoch %d acknowledged by %s", k.broker, k.epoch, strings.Join(list, " and ")))
		}
	}
	for _, s := range sends {
		if s.Epoch == 0 {
			continue
		}
		var later *Send
		for k, f := range first {
			if k.broker == s.Broker && k.epoch > s.Epoch && f.AckedAt.Before(s.SentAt) && (later == nil || f.AckedAt.Before(later.AckedAt)) {
				f := f
				later = &f
			}
		}
		if later != nil {
			out = append(out, fmt.Sprintf("split brain: %s epoch %d: %s acknowledged %s, sent at %s, after %s had acknowledged %s in epoch %d at %s",
				s.Broker, s.Epoch, s.Addr, s.Key, s.SentAt.Format(time.RFC3339Nano), later.Addr, later.Key, later.Epoch, later.AckedAt.Format(time.RFC3339Nano)))
		}
	}
	return out
}
