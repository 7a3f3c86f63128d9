package brokerkit

import (
	"testing"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/testkit"
)

func TestStartStopRestart(t *testing.T) {
	clk := testkit.Clock()
	b := Start(t, Config{Size: testkit.Small, Options: broker.Options{Clock: clk},
		Broker: func(c *broker.Config) { c.BrokerName = "kit" }})
	if b.Addr() == "" || b.Config.BrokerName != "kit" || b.StoreConfig.StorePathRootDir != b.Dir {
		t.Fatalf("started %q name %q dir %q/%q", b.Addr(), b.Config.BrokerName, b.StoreConfig.StorePathRootDir, b.Dir)
	}
	b.Stop(t)
	b.Stop(t) // once
	again := Start(t, Config{Dir: b.Dir, Size: testkit.Small})
	if again.Addr() == "" || again.Dir != b.Dir {
		t.Fatalf("restart in %q: %q", b.Dir, again.Addr())
	}
}
