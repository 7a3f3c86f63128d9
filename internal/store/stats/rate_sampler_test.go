package stats

import (
	"math"
	"testing"
)

func TestRateSamplerWindows(t *testing.T) {
	var r RateSampler
	if got := r.TPSString(); got != "  " {
		t.Fatalf("empty sampler %q", got)
	}
	// 100 per second for 11 samples: the 10 s window exists, 60 s not yet.
	for i := int64(0); i <= 10; i++ {
		r.Sample(i*1000, i*100)
	}
	if got := r.TPSString(); got != "100.0  " {
		t.Fatalf("after 11 samples %q", got)
	}
	// Fill well past 601 samples; rate changes to 50/s for the last 60.
	total := int64(1000)
	for i := int64(11); i < 1000; i++ {
		if i >= 940 {
			total += 50
		} else {
			total += 100
		}
		r.Sample(i*1000, total)
	}
	v10, _ := r.Rate(10)
	v60, _ := r.Rate(60)
	v600, ok := r.Rate(600)
	if v10 != 50 || v60 != 50 || !ok || math.Abs(v600-95) > 1e-9 {
		t.Fatalf("rates %v %v %v", v10, v60, v600)
	}
	if _, ok := r.Rate(601); ok {
		t.Fatal("window beyond capacity reported")
	}
	if got := r.TPSString(); got != "50.0 50.0 95.0" {
		t.Fatalf("TPSString %q", got)
	}
}

func TestSumTPSString(t *testing.T) {
	var a, b RateSampler
	for i := int64(0); i <= 10; i++ {
		a.Sample(i*1000, i*10)
		b.Sample(i*1000, i*5)
	}
	if got := SumTPSString(&a, &b); got != "15.0 0.0 0.0" {
		t.Fatalf("got %q", got)
	}
}
