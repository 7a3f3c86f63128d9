package controller

import (
	"testing"
	"time"
)

func TestNextWake(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const timeout = 10 * time.Second
	long := at(-time.Hour) // a leadership long past its grace
	tests := []struct {
		name string
		in   wakeInput
		want time.Time
	}{
		{"no masters: the periodic scan",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long}, at(5 * time.Second)},
		{"a live master expiring before the scan",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long,
				Masters: []masterWatch{{Live: true, Expiry: at(3 * time.Second), Timeout: timeout}}}, at(3 * time.Second)},
		{"a live master expiring after the scan",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long,
				Masters: []masterWatch{{Live: true, Expiry: at(8 * time.Second), Timeout: timeout}}}, at(5 * time.Second)},
		{"the earliest of several masters",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long,
				Masters: []masterWatch{{Live: true, Expiry: at(4 * time.Second), Timeout: timeout},
					{Live: true, Expiry: at(2 * time.Second), Timeout: timeout}}}, at(2 * time.Second)},
		{"a non-leader wakes for the periodic scan only",
			wakeInput{NextScan: at(5 * time.Second), Serving: false, ServingSince: long,
				Masters: []masterWatch{{Live: true, Expiry: at(time.Second), Timeout: timeout}}}, at(5 * time.Second)},
		{"a new leader: not before its grace ends",
			wakeInput{NextScan: at(time.Minute), Serving: true, ServingSince: at(0),
				Masters: []masterWatch{{Live: true, Expiry: at(6 * time.Second), Timeout: timeout}}}, at(10 * time.Second)},
		{"a new leader and a dead master: at the grace's end",
			wakeInput{NextScan: at(time.Minute), Serving: true, ServingSince: at(0), LastScan: at(time.Second),
				Masters: []masterWatch{{Timeout: timeout}}}, at(10 * time.Second)},
		{"a dead master whose grace the last scan saw end: the periodic scan retries",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long, LastScan: at(0),
				Masters: []masterWatch{{Timeout: timeout}}}, at(5 * time.Second)},
		{"a live master's expiry before the last scan (its connection closed since): due at once",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long, LastScan: at(2 * time.Second),
				Masters: []masterWatch{{Live: true, Expiry: at(time.Second), Timeout: timeout}}}, at(time.Second)},
		{"a dead master whose grace ends with the last scan: the periodic scan",
			wakeInput{NextScan: at(time.Minute), Serving: true, ServingSince: at(0), LastScan: at(timeout),
				Masters: []masterWatch{{Timeout: timeout}}}, at(time.Minute)},
		{"an expiry passed since the last scan: due at once",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long, LastScan: at(0),
				Masters: []masterWatch{{Live: true, Expiry: at(time.Millisecond), Timeout: timeout}}}, at(time.Millisecond)},
		{"never scanned: a past expiry is due at once",
			wakeInput{NextScan: at(5 * time.Second), Serving: true, ServingSince: long,
				Masters: []masterWatch{{Live: true, Expiry: at(-time.Second), Timeout: timeout}}}, at(-time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextWake(tt.in); !got.Equal(tt.want) {
				t.Fatalf("nextWake = %v, want %v", got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}
