package remoting

import (
	"slices"
	"strconv"
	"testing"
)

func TestRequestCodes(t *testing.T) {
	codes := RequestCodes()
	if !slices.IsSorted(codes) || len(slices.Compact(slices.Clone(codes))) != len(codes) {
		t.Fatalf("codes not sorted or repeated: %v", codes)
	}
	for _, c := range []int32{SendMessage, GetConsumeStats, WipeWritePermOfBroker, ViewBrokerStatsData,
		GetTimerCheckPoint, ControllerApplyBrokerID, AuthListACL, EvictPageCache} {
		if !slices.Contains(codes, c) {
			t.Errorf("code %d (%s) missing", c, RequestName(c))
		}
	}
	for _, c := range codes {
		if RequestName(c) == strconv.Itoa(int(c)) {
			t.Errorf("code %d has no name", c)
		}
	}
	if slices.Contains(codes, 7777) {
		t.Error("an unknown code is listed")
	}
}
