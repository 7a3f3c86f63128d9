package datapath

import (
	"testing"

	"github.com/spoolmq/spool/message"
)

// Each batch member gets the broker's properties after its own, with a
// separator only where its string lacks one; an empty value is left out.
func TestAddBrokerPropertiesToBatch(t *testing.T) {
	members := []message.BatchMember{
		{PropertiesString: ""},
		{PropertiesString: "A\x01b"},
		{PropertiesString: "A\x01b\x02"},
		{PropertiesString: "MSG_REGION\x01mine\x02"},
	}
	cfg := &Config{BrokerClusterName: "C", RegionID: "", TraceOn: true}
	addBrokerPropertiesToBatch(members, cfg)
	want := []string{
		"CLUSTER\x01C\x02TRACE_ON\x01true\x02",
		"A\x01b\x02CLUSTER\x01C\x02TRACE_ON\x01true\x02",
		"A\x01b\x02CLUSTER\x01C\x02TRACE_ON\x01true\x02",
		"MSG_REGION\x01mine\x02CLUSTER\x01C\x02TRACE_ON\x01true\x02",
	}
	for i, m := range members {
		if m.PropertiesString != want[i] {
			t.Errorf("member %d: %q, want %q", i, m.PropertiesString, want[i])
		}
	}
	cfg = &Config{BrokerClusterName: "C", RegionID: "R", TraceOn: false}
	one := []message.BatchMember{{PropertiesString: "A\x01b"}}
	addBrokerPropertiesToBatch(one, cfg)
	if got, w := one[0].PropertiesString, "A\x01b\x02CLUSTER\x01C\x02MSG_REGION\x01R\x02TRACE_ON\x01false\x02"; got != w {
		t.Errorf("%q, want %q", got, w)
	}
	if n := brokerPropertiesLen(cfg); n != len("CLUSTER\x01C\x02MSG_REGION\x01R\x02TRACE_ON\x01false\x02") {
		t.Errorf("brokerPropertiesLen = %d", n)
	}
}
