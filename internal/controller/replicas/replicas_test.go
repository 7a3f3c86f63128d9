package replicas

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/spoolmq/spool/remoting"
)

type liveKey struct {
	name string
	id   int64
}

// fakeLive is liveness set by the scenario: alive ids and their last
// heartbeat's figures.
type fakeLive struct {
	alive  map[liveKey]bool
	closed map[liveKey]bool // alive, but the last heartbeat's connection closed
	info   map[liveKey]Candidate
}

func (f *fakeLive) Alive(_, name string, id int64) bool { return f.alive[liveKey{name, id}] }
func (f *fakeLive) Electable(_, name string, id int64) bool {
	return f.alive[liveKey{name, id}] && !f.closed[liveKey{name, id}]
}
func (f *fakeLive) Candidate(_, name string, id int64) (Candidate, bool) {
	c, ok := f.info[liveKey{name, id}]
	return c, ok
}

// markIDs makes ids the marked replicas of broker name in m.
func markIDs(m map[liveKey]bool, name string, ids []int64) {
	for k := range m {
		if k.name == name {
			delete(m, k)
		}
	}
	for _, id := range ids {
		m[liveKey{name, id}] = true
	}
}

var codeNames = map[int32]string{
	remoting.Success:                              "SUCCESS",
	remoting.ControllerFencedMasterEpoch:          "FENCED_MASTER_EPOCH",
	remoting.ControllerFencedSyncStateSetEpoch:    "FENCED_SYNC_STATE_SET_EPOCH",
	remoting.ControllerInvalidMaster:              "INVALID_MASTER",
	remoting.ControllerInvalidReplicas:            "INVALID_REPLICAS",
	remoting.ControllerMasterNotAvailable:         "MASTER_NOT_AVAILABLE",
	remoting.ControllerBrokerNotAlive:             "BROKER_NOT_ALIVE",
	remoting.ControllerInvalidCleanBrokerMetadata: "INVALID_CLEAN_BROKER_METADATA",
	remoting.ControllerBrokerNeedToBeRegistered:   "BROKER_NEED_TO_BE_REGISTERED",
	remoting.ControllerMasterStillExist:           "MASTER_STILL_EXIST",
	remoting.ControllerElectMasterFailed:          "ELECT_MASTER_FAILED",
	remoting.ControllerAlterSyncStateSetFailed:    "ALTER_SYNC_STATE_SET_FAILED",
	remoting.ControllerBrokerIDInvalid:            "BROKER_ID_INVALID",
	remoting.ControllerBrokerMetadataNotExist:     "BROKER_METADATA_NOT_EXIST",
	remoting.ControllerBrokerLiveInfoNotExists:    "BROKER_LIVE_INFO_NOT_EXISTS",
	remoting.ControllerInvalidRequest:             "INVALID_REQUEST",
}

func ids(s string) []int64 {
	var out []int64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}

func describe(b *BrokerSet) string {
	if b == nil {
		return "(none)"
	}
	var reps []string
	for _, id := range b.IDs() {
		reps = append(reps, fmt.Sprintf("%d@%s", id, b.Replicas[id].Address))
	}
	master := "none"
	if b.HasMaster() {
		master = strconv.FormatInt(b.MasterID, 10)
	}
	return fmt.Sprintf("%s: master=%s masterEpoch=%d set=%v setEpoch=%d next=%d replicas=%s",
		b.BrokerName, master, b.MasterEpoch, b.SyncStateSet, b.SyncStateSetEpoch, b.NextID, strings.Join(reps, ","))
}

// TestScenarios runs testdata/*: each command validates a request against
// the state, applies the events it yields and prints the answer and the
// broker set after it.
//
//	apply-id name=b id=1 addr=a      CONTROLLER_APPLY_BROKER_ID (code addr;0)
//	register name=b id=1 addr=a      CONTROLLER_REGISTER_BROKER
//	alive name=b ids=1,2             these replicas heartbeat (others dead)
//	hb name=b id=2 epoch=1 offset=9 priority=3   heartbeat figures
//	elect name=b id=2 [designate]    CONTROLLER_ELECT_MASTER (id=-1: the controller)
//	alter name=b master=1 epoch=1 set=1,2 setEpoch=1
//	clean name=b [ids=1] [living]    CLEAN_BROKER_DATA
//	policy unclean=true
//	replay                           apply the last accepted events again
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		st := NewState()
		live := &fakeLive{alive: map[liveKey]bool{}, closed: map[liveKey]bool{}, info: map[liveKey]Candidate{}}
		var p Policy
		var last []Event
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(k string) string {
				for _, a := range d.CmdArgs {
					if a.Key == k {
						if len(a.Vals) == 0 {
							return "true"
						}
						return strings.Join(a.Vals, ",")
					}
				}
				return ""
			}
			num := func(k string) int64 {
				v := arg(k)
				if v == "" {
					return 0
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s=%q: %v", k, v, err)
				}
				return n
			}
			name := arg("name")
			var r Result
			switch d.Cmd {
			case "policy":
				p.Unclean = arg("unclean") == "true"
				return "ok"
			case "alive":
				markIDs(live.alive, name, ids(arg("ids")))
				return "ok"
			case "closed":
				markIDs(live.closed, name, ids(arg("ids")))
				return "ok"
			case "hb":
				live.info[liveKey{name, num("id")}] = Candidate{Epoch: int32(num("epoch")), MaxOffset: num("offset"), Priority: int32(num("priority"))}
				return "ok"
			case "apply-id":
				r = st.ApplyBrokerID("c", name, num("id"), arg("addr")+";0")
			case "register":
				r = st.RegisterBroker(name, num("id"), arg("addr"))
			case "elect":
				r = st.ElectMaster(name, num("id"), arg("designate") == "true", p, live)
			case "alter":
				r = st.AlterSyncStateSet(name, num("master"), int32(num("epoch")), ids(arg("set")), int32(num("setEpoch")), live)
			case "clean":
				r = st.CleanBrokerData(name, ids(arg("ids")), arg("living") == "true", live)
			case "replay":
				var out []string
				for _, e := range last {
					// Through the wire form, as the log carries it.
					raw, _ := json.Marshal(e)
					var back Event
					if err := json.Unmarshal(raw, &back); err != nil {
						t.Fatal(err)
					}
					if err := st.Apply(back, nil); err != nil {
						out = append(out, fmt.Sprintf("%s: %v", e.Type, err))
					} else {
						out = append(out, fmt.Sprintf("%s: applied", e.Type))
					}
				}
				return strings.Join(out, "\n") + "\n" + describe(st.Set(name))
			default:
				t.Fatalf("unknown command %s", d.Cmd)
			}
			for _, e := range r.Events {
				if err := st.Apply(e, nil); err != nil {
					t.Fatalf("a validated event was refused: %v", err)
				}
			}
			if len(r.Events) > 0 {
				last = r.Events
			}
			head := codeNames[r.Code]
			if !r.OK() {
				head += ": " + r.Remark
			}
			return head + "\n" + describe(st.Set(name))
		})
	})
}
