package broker

import (
	"testing"
	"time"
)

func TestDelayLevels(t *testing.T) {
	l, err := parseDelayLevels("1s 5m 2h 1d")
	if err != nil || len(l) != 4 || l[1] != 5*time.Minute || l[3] != 24*time.Hour {
		t.Fatalf("%v %v", l, err)
	}
	if _, err := parseDelayLevels("1x"); err == nil {
		t.Fatal("bad unit accepted")
	}
}
