package stats

import (
	"math"
	"strconv"
	"strings"
)

// JavaDouble formats f as Java's Double.toString does: plain decimal with at
// least one fractional digit for 1e-3 <= |f| < 1e7 ("12.0", "0.5"),
// otherwise computerized scientific notation ("1.0E7", "1.234E-4"), with the
// shortest digits that round-trip; "NaN", "Infinity", "-Infinity", "0.0".
func JavaDouble(f float64) string { return javaDecimal(f, 64) }

// JavaFloat formats f as Java's Float.toString does (the rules of
// JavaDouble with the shortest digits that round-trip a float), as
// RocketMQ's timerEnqueueTps and timerDequeueTps figures are printed.
func JavaFloat(f float32) string { return javaDecimal(float64(f), 32) }

func javaDecimal(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(f)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// HumanReadableByteCount formats n as RocketMQ's
// MixAll.humanReadableByteCount(n, false): "512 B", "1.5 KiB", "10.0 GiB"
// (one decimal, binary units), as remainHowManyDataToFlush,
// remainHowManyDataToCommit and commitLogDirCapacity are printed.
func HumanReadableByteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	exp := int(math.Log(float64(n)) / math.Log(unit))
	exp = min(exp, 6)
	return JavaFixed(float64(n)/math.Pow(unit, float64(exp)), 1) + " " + string("KMGTPE"[exp-1]) + "iB"
}

// JavaFixed formats v as Java's String.format("%.<prec>f") does: Java
// rounds the shortest decimal digits of v half up, so JavaFixed(1.25, 1) is
// "1.3" and JavaFixed(0.125, 2) is "0.13", where Go's correctly rounded
// fmt gives "1.2" and "0.12". NaN and infinities print as Java prints them.
func JavaFixed(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	neg := math.Signbit(v)
	s := strconv.FormatFloat(math.Abs(v), 'f', -1, 64)
	ip, frac, _ := strings.Cut(s, ".")
	frac += strings.Repeat("0", prec+1)
	digits := []byte(ip + frac[:prec])
	if frac[prec] >= '5' {
		i := len(digits) - 1
		for ; i >= 0 && digits[i] == '9'; i-- {
			digits[i] = '0'
		}
		if i < 0 {
			digits = append([]byte{'1'}, digits...)
		} else {
			digits[i]++
		}
	}
	n := len(digits) - prec
	out := string(digits[:n])
	if prec > 0 {
		out += "." + string(digits[n:])
	}
	if neg { // Java keeps the sign of a value rounded to zero: "-0.00"
		out = "-" + out
	}
	return out
}
