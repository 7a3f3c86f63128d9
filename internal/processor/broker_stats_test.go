package processor

import (
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/remoting"
)

type fakeStats map[string]brokerstats.Stats

func (f fakeStats) View(name, key string) (brokerstats.Stats, bool) {
	s, ok := f[name+" "+key]
	return s, ok
}

func TestViewBrokerStatsData(t *testing.T) {
	p := NewBrokerStats(fakeStats{"TOPIC_PUT_NUMS t1": {
		Minute: brokerstats.Window{Sum: 120, Tps: 2, Avgpt: 1.5},
		Hour:   brokerstats.Window{Sum: 7200, Tps: 2, Avgpt: 1},
	}})
	req := func(ext map[string]string) *remoting.Command {
		return remoting.NewRequest(remoting.ViewBrokerStatsData, ext, nil)
	}
	resp := p.HandleViewBrokerStatsData(nil, req(map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": "t1"}))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
	want := `{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.0,"sum":7200,"tps":2.0},"statsMinute":{"avgpt":1.5,"sum":120,"tps":2.0}}`
	if string(resp.Body) != want {
		t.Errorf("body\n %s\nwant\n %s", resp.Body, want)
	}
	resp = p.HandleViewBrokerStatsData(nil, req(map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": "t2"}))
	if resp.Code != remoting.SystemError || resp.Remark != "The stats <TOPIC_PUT_NUMS> <t2> not exist" {
		t.Errorf("absent: %d %q", resp.Code, resp.Remark)
	}
	resp = p.HandleViewBrokerStatsData(nil, req(map[string]string{"statsName": "TOPIC_PUT_NUMS"}))
	if resp.Code == remoting.Success || !strings.Contains(resp.Remark, "statsKey") {
		t.Errorf("missing statsKey: %d %q", resp.Code, resp.Remark)
	}
}
