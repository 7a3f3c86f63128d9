package stats

import (
	"math"
	"testing"
)

func TestJavaDouble(t *testing.T) {
	cases := map[float64]string{
		0: "0.0", 1: "1.0", 12.5: "12.5", -3: "-3.0", 0.001: "0.001", 1234567.25: "1234567.25",
		1e7: "1.0E7", 12345678: "1.2345678E7", 0.0001: "1.0E-4", 0.00012345: "1.2345E-4",
		math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", 100.0 / 3: "33.333333333333336",
	}
	for in, want := range cases {
		if got := JavaDouble(in); got != want {
			t.Errorf("JavaDouble(%v) = %q, want %q", in, got, want)
		}
	}
}

// Float.toString prints the shortest digits of the float, not of the
// double it widens to: 0.1f is "0.1", and 1/3f "0.33333334".
func TestJavaFloat(t *testing.T) {
	cases := map[float32]string{
		0: "0.0", 0.1: "0.1", 1.0 / 3: "0.33333334", 10.1: "10.1", 1e7: "1.0E7", 1.5e-4: "1.5E-4", 16777216: "1.6777216E7",
	}
	for in, want := range cases {
		if got := JavaFloat(in); got != want {
			t.Errorf("JavaFloat(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestJavaFixed(t *testing.T) {
	cases := []struct {
		v    float64
		prec int
		want string
	}{
		{0, 2, "0.00"}, {2, 2, "2.00"}, {1.25, 1, "1.3"}, {0.125, 2, "0.13"}, {0.15, 1, "0.2"},
		{1.049, 1, "1.0"}, {9.96, 1, "10.0"}, {0.999, 2, "1.00"}, {123.456, 0, "123"}, {-1.25, 1, "-1.3"},
		{-0.001, 2, "-0.00"}, {1e-7, 2, "0.00"}, {math.NaN(), 2, "NaN"},
	}
	for _, c := range cases {
		if got := JavaFixed(c.v, c.prec); got != c.want {
			t.Errorf("JavaFixed(%v, %d) = %q, want %q", c.v, c.prec, got, c.want)
		}
	}
}

func TestHumanReadableByteCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		1280: "1.3 KiB", 1177: "1.1 KiB", 1023 << 10: "1023.0 KiB", 10 << 30: "10.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := HumanReadableByteCount(n); got != want {
			t.Errorf("HumanReadableByteCount(%d) = %q, want %q", n, got, want)
		}
	}
}
