package message

import (
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestOffsetMsgID(t *testing.T) {
	store := v4(192, 168, 0, 2, 10911)
	id := OffsetMsgID(store, 1000)
	if id != "C0A8000200002A9F00000000000003E8" {
		t.Fatalf("OffsetMsgID = %s", id)
	}
	a, off, err := ParseOffsetMsgID(id)
	if err != nil || off != 1000 || a.String() != "192.168.0.2:10911" {
		t.Fatalf("ParseOffsetMsgID = %v %d %v", a, off, err)
	}
	if _, off, err := ParseOffsetMsgID("c0a8000200002a9f00000000000003e8"); err != nil || off != 1000 {
		t.Fatalf("lower case: %d %v", off, err)
	}
	id6 := OffsetMsgID(v6("2001:db8::1", 10911), 1<<40)
	if len(id6) != 56 {
		t.Fatalf("IPv6 id %q", id6)
	}
	a, off, err = ParseOffsetMsgID(id6)
	if err != nil || off != 1<<40 || a.String() != "[2001:db8::1]:10911" {
		t.Fatalf("IPv6 parse = %v %d %v", a, off, err)
	}
	for _, bad := range []string{"", "C0A8", "C0A8000200002A9F00000000000003EZ", id + "00"} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("ParseOffsetMsgID(%q) = %v", bad, err)
		}
	}
}

var uniqRE = regexp.MustCompile(`^[0-9A-F]{32}$`)

func TestNewUniqID(t *testing.T) {
	seen := make(map[string]bool)
	for range 100000 {
		id := NewUniqID()
		if !uniqRE.MatchString(id) {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
	}
}

func TestUniqIDGenerator(t *testing.T) {
	g := newUniqIDGen()
	now := time.Date(2026, 1, 31, 23, 59, 59, 0, time.Local)
	g.month = 0
	g.setMonthLocked(now)
	seen := make(map[string]bool)
	add := func(id string) {
		t.Helper()
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
	}
	// More than 65536 ids in one millisecond, then the clock going back.
	for range 70000 {
		add(g.next(now))
	}
	add(g.next(now.Add(-time.Hour)))
	first := g.next(now.Add(-time.Hour))
	add(first)
	// The ms field is the time since the start of the month.
	if first[20:28] < "9F000000" { // 30.99 days in ms is about 0x9FA52...
		t.Fatalf("ms field %s", first[20:28])
	}
	// Next month: the same ms offset must not repeat an id of January.
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.Local)
	idFeb := g.next(feb)
	add(idFeb)
	if idFeb[20:32] != "000000000000" {
		t.Fatalf("first id of the month %s", idFeb)
	}
	if idFeb[12:20] == first[12:20] {
		t.Fatal("startup field unchanged across months")
	}
	if idFeb[:12] != first[:12] {
		t.Fatal("IP/pid changed")
	}
}
