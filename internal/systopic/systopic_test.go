package systopic

import "testing"

func TestClassification(t *testing.T) {
	cases := []struct {
		topic                  string
		system, noSend, totals bool
	}{
		{AutoCreate, true, false, true},
		{Schedule, true, true, true},
		{Benchmark, true, false, false},
		{TransHalf, true, true, true},
		{TransOpHalf, true, true, true},
		{TransCheckMax, true, true, false},
		{SelfTest, true, true, false},
		{OffsetMovedEvent, true, true, false},
		{TraceDefault, true, false, true},
		{WheelTimer, true, false, true},
		{"rmq_sys_x", true, false, true},
		{"RMQ_SYS_X", false, false, true},
		{"%RETRY%g", false, false, true},
		{"%DLQ%g", false, false, true},
		{"DefaultCluster_REPLY_TOPIC", false, false, false},
		{"orders", false, false, false},
	}
	for _, c := range cases {
		if got := IsSystem(c.topic); got != c.system {
			t.Errorf("IsSystem(%q) = %v", c.topic, got)
		}
		if got := IsNotAllowedSend(c.topic); got != c.noSend {
			t.Errorf("IsNotAllowedSend(%q) = %v", c.topic, got)
		}
		if got := OutOfDayTotals(c.topic); got != c.totals {
			t.Errorf("OutOfDayTotals(%q) = %v", c.topic, got)
		}
	}
	if Retry("g") != "%RETRY%g" || DLQ("g") != "%DLQ%g" || !IsRetry(Retry("g")) || IsRetry(DLQ("g")) || !IsDLQ(DLQ("g")) {
		t.Fatal("retry and dead-letter names")
	}
}
