package failover

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlanRegistration(t *testing.T) {
	mine := Identity{ClusterName: "c", BrokerName: "b", BrokerID: 2}
	tempMine := Identity{ClusterName: "c", BrokerName: "b", BrokerID: 3, CheckCode: "a;1"}
	for _, tt := range []struct {
		name           string
		id, temp       Identity
		have, haveTemp bool
		want           RegisterStep
		err            string
	}{
		{name: "fresh store", want: StepNextID},
		{name: "temp file: apply its id", temp: tempMine, haveTemp: true, want: StepApply},
		{name: "identity: register", id: mine, have: true, want: StepRegister},
		{name: "identity wins over temp", id: mine, have: true, temp: tempMine, haveTemp: true, want: StepRegister},
		{name: "identity of another broker", id: Identity{ClusterName: "c", BrokerName: "x", BrokerID: 1}, have: true, want: StepRegister, err: `names broker "x"`},
		{name: "identity of another cluster", id: Identity{ClusterName: "d", BrokerName: "b", BrokerID: 1}, have: true, want: StepRegister, err: `names cluster "d"`},
		{name: "temp of another broker", temp: Identity{ClusterName: "c", BrokerName: "x", BrokerID: 1, CheckCode: "a;1"}, haveTemp: true, want: StepApply, err: TempIdentityFile},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanRegistration("c", "b", tt.id, tt.have, tt.temp, tt.haveTemp)
			if got != tt.want {
				t.Errorf("step %d, want %d", got, tt.want)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestDecideRole(t *testing.T) {
	slave := Local{ID: 2, Role: RoleSlave, MasterEpoch: 3, SyncStateSetEpoch: 0}
	master := Local{ID: 1, Role: RoleMaster, MasterEpoch: 3, SyncStateSetEpoch: 4}
	fresh := Local{ID: 2}
	for _, tt := range []struct {
		name string
		l    Local
		v    View
		want Action
	}{
		{"fresh broker told another is master", fresh, View{MasterID: 1, MasterAddr: "a:1", MasterEpoch: 1}, BecomeSlave},
		{"fresh broker told it is master", fresh, View{MasterID: 2, MasterAddr: "b:1", MasterEpoch: 1}, BecomeMaster},
		{"fresh broker, no master yet", fresh, View{}, Nothing},
		{"newer epoch without master", slave, View{MasterEpoch: 4}, Elect},
		{"slave promoted", slave, View{MasterID: 2, MasterAddr: "b:1", MasterEpoch: 4}, BecomeMaster},
		{"slave follows a new master", slave, View{MasterID: 3, MasterAddr: "c:1", MasterEpoch: 4}, BecomeSlave},
		{"stale push ignored", slave, View{MasterID: 2, MasterAddr: "b:1", MasterEpoch: 2}, Nothing},
		{"same epoch push ignored", slave, View{MasterID: 2, MasterAddr: "b:1", MasterEpoch: 3}, Nothing},
		{"deposed master becomes slave", master, View{MasterID: 2, MasterAddr: "b:1", MasterEpoch: 4}, BecomeSlave},
		{"master re-elected in a newer epoch", master, View{MasterID: 1, MasterAddr: "a:1", MasterEpoch: 4}, BecomeMaster},
		{"master adopts a newer set", master, View{MasterID: 1, MasterAddr: "a:1", MasterEpoch: 3, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5}, AdoptSyncStateSet},
		{"master ignores an older set", master, View{MasterID: 1, MasterAddr: "a:1", MasterEpoch: 3, SyncStateSetEpoch: 4}, Nothing},
		{"slave ignores sets", slave, View{MasterID: 1, MasterAddr: "a:1", MasterEpoch: 3, SyncStateSetEpoch: 9}, Nothing},
		{"master id without address is no master", slave, View{MasterID: 1, MasterEpoch: 4}, Elect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRole(tt.l, tt.v); got != tt.want {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextSyncStateSet(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	max := 15 * time.Second
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tt := range []struct {
		name    string
		in      SyncInput
		want    []int64
		changed bool
	}{
		{name: "master alone stays", in: SyncInput{Self: 1, Set: []int64{1}, Now: at(100)}, want: []int64{1}},
		{name: "master always a member", in: SyncInput{Self: 1, Set: nil, Now: at(100)}, want: []int64{1}, changed: true},
		{
			name: "slave caught up to the confirm offset joins",
			in: SyncInput{Self: 1, Set: []int64{1}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50),
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 500, CaughtUpAt: at(99)}}},
			want: []int64{1, 2}, changed: true,
		},
		{
			name: "slave short of the confirm offset stays out",
			in: SyncInput{Self: 1, Set: []int64{1}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50),
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 499, CaughtUpAt: at(99)}}},
			want: []int64{1},
		},
		{
			name: "slave never caught up in this epoch stays out",
			in: SyncInput{Self: 1, Set: []int64{1}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50),
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 500}}},
			want: []int64{1},
		},
		{
			name: "catch-up from before this epoch does not count",
			in: SyncInput{Self: 1, Set: []int64{1}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50),
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 500, CaughtUpAt: at(49)}}},
			want: []int64{1},
		},
		{
			name: "member behind for less than the limit stays",
			in: SyncInput{Self: 1, Set: []int64{1, 2}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50), MaxNotCatchup: max,
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 10, CaughtUpAt: at(86)}}},
			want: []int64{1, 2},
		},
		{
			name: "member behind for the limit leaves",
			in: SyncInput{Self: 1, Set: []int64{1, 2}, ConfirmOffset: 500, Now: at(100), MasterSince: at(50), MaxNotCatchup: max,
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 10, CaughtUpAt: at(85)}}},
			want: []int64{1}, changed: true,
		},
		{
			name: "a new master gives members the limit from its start",
			in:   SyncInput{Self: 1, Set: []int64{1, 2, 3}, Now: at(60), MasterSince: at(50), MaxNotCatchup: max},
			want: []int64{1, 2, 3},
		},
		{
			name: "unconnected member leaves after the limit from its last catch-up",
			in: SyncInput{Self: 1, Set: []int64{1, 2, 3}, Now: at(100), MasterSince: at(50), MaxNotCatchup: max,
				LastCaughtUp: map[int64]time.Time{2: at(90), 3: at(80)}},
			want: []int64{1, 2}, changed: true,
		},
		{
			name: "shrink and expand in one decision",
			in: SyncInput{Self: 1, Set: []int64{1, 2}, ConfirmOffset: 7, Now: at(100), MasterSince: at(50), MaxNotCatchup: max,
				Replicas: []ReplicaState{{BrokerID: 2, AckOffset: 1, CaughtUpAt: at(60)}, {BrokerID: 3, AckOffset: 7, CaughtUpAt: at(100)}}},
			want: []int64{1, 3}, changed: true,
		},
		{
			name: "order of the accepted set does not matter",
			in:   SyncInput{Self: 3, Set: []int64{3, 1}, Now: at(60), MasterSince: at(50), MaxNotCatchup: max},
			want: []int64{1, 3},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.MaxNotCatchup == 0 {
				tt.in.MaxNotCatchup = max
			}
			got, changed := NextSyncStateSet(tt.in)
			if !slices.Equal(got, tt.want) || changed != tt.changed {
				t.Errorf("got %v changed=%v, want %v changed=%v", got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestFenced(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	lease := 5 * time.Second
	for _, tt := range []struct {
		name string
		in   LeaseInput
		want bool
	}{
		{"master inside its lease", LeaseInput{Role: RoleMaster, EpochCurrent: true, Renewed: t0, Now: t0.Add(4999 * time.Millisecond)}, false},
		{"master at the end of its lease", LeaseInput{Role: RoleMaster, EpochCurrent: true, Renewed: t0, Now: t0.Add(lease)}, true},
		{"master past its lease", LeaseInput{Role: RoleMaster, EpochCurrent: true, Renewed: t0, Now: t0.Add(time.Minute)}, true},
		{"master never renewed in this epoch", LeaseInput{Role: RoleMaster, EpochCurrent: true, Now: t0}, true},
		{"master whose epoch is superseded", LeaseInput{Role: RoleMaster, EpochCurrent: false, Renewed: t0, Now: t0}, true},
		{"slave", LeaseInput{Role: RoleSlave, EpochCurrent: true, Renewed: t0, Now: t0}, true},
		{"no role", LeaseInput{Role: RoleNone, EpochCurrent: true, Renewed: t0, Now: t0}, true},
		{"clock stepped back keeps the lease", LeaseInput{Role: RoleMaster, EpochCurrent: true, Renewed: t0, Now: t0.Add(-time.Second)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Lease = lease
			if got := Fenced(tt.in); got != tt.want {
				t.Errorf("fenced=%v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigLeaseShorterThanTimeout(t *testing.T) {
	c := DefaultConfig()
	c.ControllerAddr = "127.0.0.1:19876"
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Lease() != 5*time.Second || c.Lease() >= ms(c.ControllerHeartBeatTimeoutMills) {
		t.Fatalf("lease %v with a heartbeat timeout of %d ms", c.Lease(), c.ControllerHeartBeatTimeoutMills)
	}
	c.BrokerHeartbeatInterval = 5000
	if err := c.Check(); err == nil {
		t.Fatal("a heartbeat interval as long as the lease was accepted")
	}
	c = DefaultConfig()
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "controllerAddr") {
		t.Fatalf("no controllerAddr: %v", err)
	}
}

func TestJoinersHold(t *testing.T) {
	reps := []ReplicaState{{BrokerID: 2, AckOffset: 100}, {BrokerID: 3, AckOffset: 90}}
	for _, c := range []struct {
		set, next []int64
		confirm   int64
		joining   []int64
		union     []int64
		hold      bool
	}{
		{set: []int64{1}, next: []int64{1, 2}, confirm: 100, joining: []int64{2}, union: []int64{1, 2}, hold: true},
		// The old set acknowledged past what the joiner holds.
		{set: []int64{1}, next: []int64{1, 2}, confirm: 101, joining: []int64{2}, union: []int64{1, 2}, hold: false},
		{set: []int64{1}, next: []int64{1, 2, 3}, confirm: 95, joining: []int64{2, 3}, union: []int64{1, 2, 3}, hold: false},
		{set: []int64{1, 3}, next: []int64{1, 2}, confirm: 100, joining: []int64{2}, union: []int64{1, 2, 3}, hold: true},
		// A joiner that is not connected holds nothing it can show.
		{set: []int64{1}, next: []int64{1, 4}, confirm: 0, joining: []int64{4}, union: []int64{1, 4}, hold: false},
		{set: []int64{1, 2}, next: []int64{1}, confirm: 500, joining: nil, union: []int64{1, 2}, hold: true},
	} {
		j := Joining(c.set, c.next)
		if !slices.Equal(j, c.joining) {
			t.Errorf("Joining(%v, %v) = %v, want %v", c.set, c.next, j, c.joining)
		}
		if u := Union(c.set, c.next); !slices.Equal(u, c.union) {
			t.Errorf("Union(%v, %v) = %v, want %v", c.set, c.next, u, c.union)
		}
		if h := JoinersHold(j, reps, c.confirm); h != c.hold {
			t.Errorf("JoinersHold(%v, confirm %d) = %v, want %v", j, c.confirm, h, c.hold)
		}
	}
}
