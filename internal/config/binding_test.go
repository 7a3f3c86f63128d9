package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type testBroker struct {
	ListenPort            int    `prop:"listenPort"`
	BrokerName            string `prop:"brokerName"`
	AutoCreateTopicEnable bool   `prop:"autoCreateTopicEnable" live:"true"`
	SendThreadPoolQueue   int32  `prop:"sendThreadPoolQueueCapacity" live:"true"`
	Store                 testStore
	Untagged              int
}

type testStore struct {
	StorePathRootDir      string  `prop:"storePathRootDir" live:"true"` // live tag on a path: still refused
	MaxMessageSize        int64   `prop:"maxMessageSize" live:"true"`
	DiskMaxUsedSpaceRatio float64 `prop:"diskMaxUsedSpaceRatio"`
	SkipCorruptedRecords  bool    `prop:"skipCorruptedRecords"` // a Spool key
	FileReservedTime      uint32  `prop:"fileReservedTime" live:"true"`
}

func defaults() testBroker {
	return testBroker{ListenPort: 10911, BrokerName: "broker-a", AutoCreateTopicEnable: true,
		Store: testStore{StorePathRootDir: "/store", MaxMessageSize: 4 << 20, DiskMaxUsedSpaceRatio: 75}}
}

func TestBindClasses(t *testing.T) {
	tests := []struct {
		name        string
		props       map[string]string
		wantErr     error
		errContains []string
		applied     []string
		unbuilt     []string
		check       func(t *testing.T, b testBroker)
	}{
		{
			name:    "supported keys applied with types",
			props:   map[string]string{"listenPort": " 20911 ", "brokerName": " b ", "autoCreateTopicEnable": "FALSE", "maxMessageSize": "1024", "diskMaxUsedSpaceRatio": "88.5", "skipCorruptedRecords": "true", "sendThreadPoolQueueCapacity": "5", "fileReservedTime": "48"},
			applied: []string{"autoCreateTopicEnable", "brokerName", "diskMaxUsedSpaceRatio", "fileReservedTime", "listenPort", "maxMessageSize", "sendThreadPoolQueueCapacity", "skipCorruptedRecords"},
			check: func(t *testing.T, b testBroker) {
				want := testBroker{ListenPort: 20911, BrokerName: "b", AutoCreateTopicEnable: false, SendThreadPoolQueue: 5,
					Store: testStore{StorePathRootDir: "/store", MaxMessageSize: 1024, DiskMaxUsedSpaceRatio: 88.5, SkipCorruptedRecords: true, FileReservedTime: 48}}
				if b != want {
					t.Fatalf("got %+v\nwant %+v", b, want)
				}
			},
		},
		{
			name:    "known RocketMQ keys not built are reported",
			props:   map[string]string{"listenPort": "1", "enablePropertyFilter": "true", "traceTopicEnable": "false", "brokerRole": "ASYNC_MASTER", "aclEnable": "false"},
			applied: []string{"listenPort"},
			unbuilt: []string{"aclEnable", "brokerRole", "enablePropertyFilter", "traceTopicEnable"},
		},
		{name: "sync master accepted", props: map[string]string{"brokerRole": "SYNC_MASTER"}, unbuilt: []string{"brokerRole"}},
		{name: "slave accepted", props: map[string]string{"brokerRole": "SLAVE", "haMasterAddress": "10.0.0.1:10912"}, unbuilt: []string{"brokerRole", "haMasterAddress"}},
		{name: "acl refused", props: map[string]string{"aclEnable": "true"}, wantErr: ErrNotBuilt, errContains: []string{"aclEnable=true"}},
		{name: "controller refused", props: map[string]string{"enableControllerMode": "True"}, wantErr: ErrNotBuilt, errContains: []string{"enableControllerMode"}},
		{name: "duplication refused", props: map[string]string{"duplicationEnable": "true"}, wantErr: ErrNotBuilt, errContains: []string{"duplicationEnable"}},
		{name: "dledger refused", props: map[string]string{"enableDLegerCommitLog": "true"}, wantErr: ErrNotBuilt},
		{name: "in-sync replicas accepted", props: map[string]string{"inSyncReplicas": "3"}, unbuilt: []string{"inSyncReplicas"}},
		{name: "auto in-sync replicas refused", props: map[string]string{"minInSyncReplicas": "2"}, wantErr: ErrNotBuilt, errContains: []string{"minInSyncReplicas=2"}},
		{name: "total replicas refused", props: map[string]string{"totalReplicas": "3"}, wantErr: ErrNotBuilt},
		{name: "slave id accepted", props: map[string]string{"brokerId": "1"}, unbuilt: []string{"brokerId"}},
		{name: "master id is fine", props: map[string]string{"brokerId": "0"}, unbuilt: []string{"brokerId"}},
		{name: "read-only permission refused while unbuilt", props: map[string]string{"brokerPermission": "4"}, wantErr: ErrNotBuilt},
		{name: "default permission is fine", props: map[string]string{"brokerPermission": "6"}, unbuilt: []string{"brokerPermission"}},
		{name: "unknown key names nearest", props: map[string]string{"listenPrt": "1"}, wantErr: ErrUnknownKey, errContains: []string{"listenPrt", "did you mean listenPort?"}},
		{name: "case typo names nearest", props: map[string]string{"flushdisktype": "SYNC_FLUSH"}, wantErr: ErrUnknownKey, errContains: []string{"did you mean flushDiskType?"}},
		{name: "nearest may be a Spool key", props: map[string]string{"skipCorruptedRecord": "true"}, wantErr: ErrUnknownKey, errContains: []string{"did you mean skipCorruptedRecords?"}},
		{name: "bad int", props: map[string]string{"listenPort": "ten"}, wantErr: ErrBadValue, errContains: []string{"listenPort"}},
		{name: "int overflow", props: map[string]string{"sendThreadPoolQueueCapacity": "4294967296"}, wantErr: ErrBadValue},
		{name: "negative unsigned", props: map[string]string{"fileReservedTime": "-1"}, wantErr: ErrBadValue},
		{name: "bad bool", props: map[string]string{"autoCreateTopicEnable": "yes"}, wantErr: ErrBadValue, errContains: []string{"autoCreateTopicEnable"}},
		{name: "bad float", props: map[string]string{"diskMaxUsedSpaceRatio": "NaN"}, wantErr: ErrBadValue},
		{
			name:        "all errors reported, nothing applied",
			props:       map[string]string{"listenPort": "1", "aclEnable": "true", "bogusKey": "x"},
			wantErr:     ErrUnknownKey,
			errContains: []string{"aclEnable", "bogusKey"},
			check: func(t *testing.T, b testBroker) {
				if b.ListenPort != 10911 {
					t.Fatalf("listenPort applied despite errors: %d", b.ListenPort)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := defaults()
			rep, err := Bind(tt.props, &b)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errContains {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				if !reflect.DeepEqual(rep.Applied, tt.applied) {
					t.Errorf("applied = %v, want %v", rep.Applied, tt.applied)
				}
				if !reflect.DeepEqual(rep.Unbuilt, tt.unbuilt) {
					t.Errorf("unbuilt = %v, want %v", rep.Unbuilt, tt.unbuilt)
				}
			}
			if tt.check != nil {
				tt.check(t, b)
			}
		})
	}
}

func TestBindSeveralTargets(t *testing.T) {
	type namesrv struct {
		ListenPort   int    `prop:"listenPort"`
		KVConfigPath string `prop:"kvConfigPath"`
	}
	b := defaults()
	n := namesrv{ListenPort: 9876}
	rep, err := Bind(map[string]string{"listenPort": "7777", "kvConfigPath": "/kv.json", "brokerName": "x"}, &b, &n)
	if err != nil {
		t.Fatal(err)
	}
	if b.ListenPort != 7777 || n.ListenPort != 7777 || n.KVConfigPath != "/kv.json" || b.BrokerName != "x" {
		t.Fatalf("b=%+v n=%+v", b, n)
	}
	if want := []string{"brokerName", "kvConfigPath", "listenPort"}; !reflect.DeepEqual(rep.Applied, want) {
		t.Fatalf("applied %v", rep.Applied)
	}
}

func TestBindBadTargets(t *testing.T) {
	type withDuration struct {
		D time.Duration `prop:"syncFlushTimeout"`
	}
	type withSlice struct {
		S []string `prop:"namesrvAddr"`
	}
	type unexported struct {
		x int `prop:"listenPort"`
	}
	b := defaults()
	for _, target := range []any{b, (*testBroker)(nil), &withDuration{}, &withSlice{}, &unexported{}, new(int)} {
		if _, err := Bind(map[string]string{}, target); !errors.Is(err, ErrBadTarget) {
			t.Errorf("%T: err = %v, want ErrBadTarget", target, err)
		}
	}
	_ = unexported{}.x
}

func TestDump(t *testing.T) {
	b := defaults()
	b.Store.DiskMaxUsedSpaceRatio = 0.75
	type other struct {
		ListenPort int    `prop:"listenPort"`
		Extra      string `prop:"extra"`
	}
	got := Dump(&b, &other{ListenPort: 1, Extra: "e"})
	want := map[string]string{
		"listenPort": "10911", "brokerName": "broker-a", "autoCreateTopicEnable": "true",
		"sendThreadPoolQueueCapacity": "0", "storePathRootDir": "/store", "maxMessageSize": "4194304",
		"diskMaxUsedSpaceRatio": "0.75", "skipCorruptedRecords": "false", "fileReservedTime": "0", "extra": "e",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	// Dump's text binds back to the same values.
	c := testBroker{}
	props := Dump(&b)
	if _, err := Bind(props, &c); err != nil {
		t.Fatal(err)
	}
	if c != b {
		t.Fatalf("round trip: %+v != %+v", c, b)
	}
}

func TestUpdateLive(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		wantErr error
		names   []string
		check   func(b testBroker) bool
	}{
		{name: "live keys applied", props: map[string]string{"autoCreateTopicEnable": "false", "maxMessageSize": "2048"},
			check: func(b testBroker) bool { return !b.AutoCreateTopicEnable && b.Store.MaxMessageSize == 2048 }},
		{name: "non-live refused by name", props: map[string]string{"listenPort": "1", "maxMessageSize": "2048"}, wantErr: ErrNotLive, names: []string{"listenPort"},
			check: func(b testBroker) bool { return b.ListenPort == 10911 && b.Store.MaxMessageSize == 4<<20 }},
		{name: "path refused even when tagged live", props: map[string]string{"storePathRootDir": "/tmp/x"}, wantErr: ErrNotLive, names: []string{"storePathRootDir"},
			check: func(b testBroker) bool { return b.Store.StorePathRootDir == "/store" }},
		{name: "unbuilt rocketmq key refused", props: map[string]string{"traceTopicEnable": "true"}, wantErr: ErrNotLive, names: []string{"traceTopicEnable"}},
		{name: "unknown key refused", props: map[string]string{"maxMesageSize": "1"}, wantErr: ErrUnknownKey, names: []string{"did you mean maxMessageSize?"}},
		{name: "bad value refused", props: map[string]string{"maxMessageSize": "big"}, wantErr: ErrBadValue, names: []string{"maxMessageSize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := defaults()
			err := UpdateLive(tt.props, &b)
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, n := range tt.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("error %q does not name %q", err, n)
				}
			}
			if err != nil && strings.Contains(err.Error(), "/store") {
				t.Errorf("error reveals a path: %v", err)
			}
			if tt.check != nil && !tt.check(b) {
				t.Fatalf("state after update: %+v", b)
			}
		})
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		in   map[string]string
		want map[string]string
		set  []string
	}{
		{env: map[string]string{}, in: map[string]string{"brokerIP1": "10.0.0.1"}, want: map[string]string{"brokerIP1": "10.0.0.1"}},
		{env: map[string]string{EnvBrokerIP1: " 192.168.1.5 "}, in: map[string]string{"brokerIP1": "10.0.0.1"}, want: map[string]string{"brokerIP1": "192.168.1.5"}, set: []string{"brokerIP1"}},
		{env: map[string]string{EnvBrokerIP1: "192.168.1.5"}, in: map[string]string{}, want: map[string]string{"brokerIP1": "192.168.1.5"}, set: []string{"brokerIP1"}},
	}
	for i, tt := range tests {
		set := ApplyEnv(tt.in, func(k string) string { return tt.env[k] })
		if !reflect.DeepEqual(tt.in, tt.want) || !reflect.DeepEqual(set, tt.set) {
			t.Errorf("%d: props %v set %v", i, tt.in, set)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"listenport", "listenport", 0}, {"abc", "acb", 2}}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q,%q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestKnownKeysSorted(t *testing.T) {
	for i := 1; i < len(rocketmqKeys); i++ {
		if rocketmqKeys[i-1] >= rocketmqKeys[i] {
			t.Fatalf("keys not sorted/unique at %q", rocketmqKeys[i])
		}
	}
	for _, k := range []string{"listenPort", "brokerIP1", "storePathRootDir", "flushDiskType", "scanNotActiveBrokerInterval", "kvConfigPath", "aclEnable", "authenticationEnabled"} {
		if !IsRocketMQKey(k) {
			t.Errorf("%s missing", k)
		}
	}
	for k := range refusals {
		if !IsRocketMQKey(k) {
			t.Errorf("refusal rule for non-RocketMQ key %s", k)
		}
	}
}

// allAckInSyncStateSet and minInSyncReplicas act in controller mode: the
// refusal is lifted only when enableControllerMode=true comes with them.
func TestControllerModeLiftsInSyncRefusals(t *testing.T) {
	on := map[string]string{"enableControllerMode": "true"}
	for _, kv := range [][2]string{{"allAckInSyncStateSet", "true"}, {"minInSyncReplicas", "2"}} {
		if r := refusal(kv[0], kv[1], false, nil); r == "" {
			t.Errorf("%s=%s accepted outside controller mode", kv[0], kv[1])
		}
		if r := refusal(kv[0], kv[1], false, map[string]string{"enableControllerMode": "false"}); r == "" {
			t.Errorf("%s=%s accepted with enableControllerMode=false", kv[0], kv[1])
		}
		if r := refusal(kv[0], kv[1], false, on); r != "" {
			t.Errorf("%s=%s refused in controller mode: %s", kv[0], kv[1], r)
		}
	}
	if r := refusal("totalReplicas", "3", false, on); r == "" {
		t.Error("totalReplicas=3 accepted in controller mode (it needs slaves acting as masters)")
	}
}
