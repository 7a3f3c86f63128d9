package delaylevel

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	const s, m, h, d = time.Second, time.Minute, time.Hour, 24 * time.Hour
	ok := []struct {
		in   string
		want []time.Duration
	}{
		{"1s 5m 2h 1d", []time.Duration{s, 5 * m, 2 * h, d}},
		{"1s  5s\t10s ", []time.Duration{s, 5 * s, 10 * s}}, // any white space
		{"0s", []time.Duration{0}},
		{"+3s", []time.Duration{3 * s}}, // as Java's Long.parseLong
		{Default, []time.Duration{s, 5 * s, 10 * s, 30 * s, m, 2 * m, 3 * m, 4 * m, 5 * m, 6 * m, 7 * m, 8 * m, 9 * m, 10 * m, 20 * m, 30 * m, h, 2 * h}},
		{"", nil}, // Default
		{" \t", nil},
		{strings.Repeat("1s ", MaxLevels), slices.Repeat([]time.Duration{s}, MaxLevels)},
	}
	for _, c := range ok {
		got, err := Parse(c.in)
		if c.want == nil {
			c.want, _ = Parse(Default)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"1x", "1", "s", "1S", "-1s", "1.5s", "1s 5", strings.Repeat("1s ", MaxLevels+1)} {
		if got, err := Parse(in); !errors.Is(err, ErrBadLevels) {
			t.Errorf("Parse(%q) = %v, %v; want ErrBadLevels", in, got, err)
		}
	}
	if _, err := Parse("1s 1x"); err == nil || err.Error() != `messageDelayLevel entry "1x" (want a number with unit s, m, h or d)` {
		t.Errorf("error text %v", err)
	}
}

func TestMillisClamps(t *testing.T) {
	levels := []time.Duration{time.Second, time.Minute}
	for _, c := range []struct {
		level int
		want  int64
	}{{-1, 0}, {0, 0}, {1, 1000}, {2, 60000}, {3, 60000}, {99, 60000}} {
		if got := Millis(levels, c.level); got != c.want {
			t.Errorf("Millis(level %d) = %d, want %d", c.level, got, c.want)
		}
	}
	if got := Millis(nil, 1); got != 0 {
		t.Errorf("Millis of no levels = %d", got)
	}
}
