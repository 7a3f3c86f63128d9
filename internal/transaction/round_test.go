package transaction

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestTransactionRoundScenarios runs the scenario files in testdata/txcheck:
// which halves a check round takes (the index's candidates) and what it
// does with each (planCheck), with the round's effects on the check counts
// applied as the service applies them. Commands:
//
//	half q=N phy=OFF born=MS [immunity=MS] [checks=N] group=G
//	                      index a pending half
//	round now=MS timeout=MS max=N minphy=OFF [producers=(G,...)] [send-fails=(Q,...)]
//	                      one round: each candidate's step and count after it
//	pending               the halves still indexed
func TestTransactionRoundScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/txcheck", func(t *testing.T, path string) {
		idx := NewIndex()
		idx.FinishRebuild(0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			num := func(key string, def int64) int64 {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						v, err := strconv.ParseInt(a.Vals[0], 10, 64)
						if err != nil {
							d.Fatalf(t, "%s: %v", key, err)
						}
						return v
					}
				}
				return def
			}
			set := func(key string) map[string]bool {
				out := map[string]bool{}
				for _, a := range d.CmdArgs {
					if a.Key == key {
						for _, v := range a.Vals {
							out[v] = true
						}
					}
				}
				return out
			}
			var out strings.Builder
			switch d.Cmd {
			case "half":
				var group string
				d.ScanArgs(t, "group", &group)
				idx.Add(&PendingHalf{QueueOffset: num("q", 0), Phy: num("phy", 0), Size: 100, Born: num("born", 0),
					ImmunityMs: num("immunity", 0), Checks: int32(num("checks", 0)), Group: group})
				return "ok"
			case "round":
				producers, fails := set("producers"), set("send-fails")
				minPhy := num("minphy", 0)
				for _, h := range idx.Candidates(num("now", 0), num("timeout", 6000)) {
					step := planCheck(h, producers[h.Group], func() int64 { return minPhy }, int(num("max", 15)))
					q := strconv.FormatInt(h.QueueOffset, 10)
					switch step {
					case stepCount:
						fmt.Fprintf(&out, "half %s: no producer of %s, nothing read; attempts %d\n", q, h.Group, idx.AddCheck(h.QueueOffset))
					case stepExpire:
						idx.Resolve(h.QueueOffset)
						fmt.Fprintf(&out, "half %s: record left the CommitLog, dropped\n", q)
					case stepCheck:
						if fails[q] {
							fmt.Fprintf(&out, "half %s: read, check to %s not sent, not counted; attempts %d\n", q, h.Group, h.Checks)
							continue
						}
						fmt.Fprintf(&out, "half %s: read, check sent to %s; attempts %d\n", q, h.Group, idx.AddCheck(h.QueueOffset))
					case stepGiveUp:
						idx.Resolve(h.QueueOffset)
						fmt.Fprintf(&out, "half %s: read, given up after %d attempts (TRANS_CHECK_MAX_TIME_TOPIC)\n", q, h.Checks)
					}
				}
				if out.Len() == 0 {
					return "no half old enough"
				}
			case "pending":
				for _, h := range idx.Candidates(1<<62, 0) {
					fmt.Fprintf(&out, "half %d: group %s, attempts %d\n", h.QueueOffset, h.Group, h.Checks)
				}
				if out.Len() == 0 {
					return "none"
				}
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			return out.String()
		})
	})
}
