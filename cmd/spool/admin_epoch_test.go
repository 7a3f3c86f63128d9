package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/processor"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// TestAdminGetBrokerEpoch: getBrokerEpoch finds a broker set's replicas
// on the name server and prints each one's GET_BROKER_EPOCH_CACHE answer,
// here a controller-mode replica's (the broker's handler over an epoch
// file), the last entry ending at the replica's max offset as mqadmin
// prints it.
func TestAdminGetBrokerEpoch(t *testing.T) {
	ef, err := store.OpenEpochFile(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 4096}} {
		if err := ef.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	adm := processor.NewAdmin(processor.AdminDeps{
		Config: func() processor.AdminConfig {
			return processor.AdminConfig{BrokerName: "broker-e", BrokerClusterName: "DefaultCluster"}
		},
		Epochs:       func() processor.EpochTable { return ef },
		BrokerID:     func() int64 { return 2 },
		MaxPhyOffset: func() int64 { return 8192 },
	})
	srv := transport.NewServer(transport.ServerConfig{})
	srv.Register(remoting.GetBrokerEpochCache, adm.HandleGetBrokerEpochCache, nil)
	ba, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	ns, err := namesrv.New(namesrv.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown() })
	na, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := ns.Handle(remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": "broker-e", "brokerAddr": ba.String(), "clusterName": "DefaultCluster", "brokerId": "2"}, nil))
	if reg.Code != remoting.Success {
		t.Fatalf("register: %d %s", reg.Code, reg.Remark)
	}
	f := &adminFixture{t: t, ns: na.String()}
	out := f.ok("getBrokerEpoch", "-b", "broker-e")
	f.contains("getBrokerEpoch", out, "#clusterName\tDefaultCluster", "#brokerName\tbroker-e", "#brokerAddr\t"+ba.String(), "#brokerId\t2",
		"#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=4096}",
		"#Epoch: EpochEntry{epoch=3, startOffset=4096, endOffset=8192}")
	var all []struct {
		BrokerAddr string                    `json:"brokerAddr"`
		EpochCache processor.EpochEntryCache `json:"epochCache"`
	}
	js := f.ok("getBrokerEpoch", "-b", "broker-e", "--output", "json")
	if err := json.NewDecoder(bytes.NewReader([]byte(js))).Decode(&all); err != nil {
		t.Fatalf("json: %v\n%s", err, js)
	}
	if len(all) != 1 || all[0].BrokerAddr != ba.String() || all[0].EpochCache.MaxOffset != 8192 || len(all[0].EpochCache.EpochList) != 2 ||
		all[0].EpochCache.EpochList[1] != (processor.EpochEntry{Epoch: 3, StartOffset: 4096, EndOffset: 8192}) {
		t.Fatalf("json %s", js)
	}
	if strings.Contains(out, "the broker answered code") {
		t.Fatalf("refusal: %s", out)
	}
}
