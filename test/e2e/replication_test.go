package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/spoolmq/spool/remoting"
)

// startProcess starts one spool process (name server or broker) with its
// own command line; the process is stopped at the end of the test.
func startProcess(t *testing.T, namesrvAddr, brokerAddr string, args ...string) *spool {
	t.Helper()
	s := &spool{t: t, store: t.TempDir(), namesrvAddr: namesrvAddr, brokerAddr: brokerAddr, args: args}
	s.start()
	t.Cleanup(func() {
		if s.running() {
			s.stop()
		}
	})
	return s
}

// A SYNC_MASTER answers SEND_OK only for what its slave holds: after the
// master is killed with SIGKILL, every acknowledged message is read from
// the slave (slaveReadEnable=true), none lost.
func TestReplicationSyncMasterKilledSlaveServesAcknowledged(t *testing.T) {
	t.Parallel()
	ns := fmt.Sprintf("127.0.0.1:%d", freePort(t, false))
	mPort, sPort := freePort(t, true), freePort(t, true)
	haPort := freePort(t, false)
	master := fmt.Sprintf("127.0.0.1:%d", mPort)
	slave := fmt.Sprintf("127.0.0.1:%d", sPort)
	startProcess(t, ns, "", "namesrv", "--listen", ns)
	common := []string{"--namesrv", ns, "--set", "brokerName=broker-ha", "--set", "brokerClusterName=HACluster",
		"--set", "haSendHeartbeatInterval=200", "--set", "slaveTimeout=5000"}
	m := startProcess(t, ns, master, append([]string{"broker", "--listen", master, "--store", t.TempDir(),
		"--set", "brokerRole=SYNC_MASTER", "--set", "brokerId=0", "--set", "haListenPort=" + strconv.Itoa(haPort)}, common...)...)
	sl := startProcess(t, ns, slave, append([]string{"broker", "--listen", slave, "--store", t.TempDir(),
		"--set", "brokerRole=SLAVE", "--set", "brokerId=1", "--set", "slaveReadEnable=true",
		"--set", "haListenPort=" + strconv.Itoa(freePort(t, false))}, common...)...)
	defer m.logOnFailure(t)
	defer sl.logOnFailure(t)

	topic := "E2EReplicationSync"
	m.createTopic(t, m.newAdmin(t), topic, 1)
	// Slaves do not copy their master's topics yet: create it on the
	// slave too, so its pull finds the topic.
	if err := sl.newAdmin(t).CreateTopic(context.Background(), admin.WithTopicCreate(topic),
		admin.WithBrokerAddrCreate(slave), admin.WithReadQueueNums(1), admin.WithWriteQueueNums(1)); err != nil {
		t.Fatalf("create topic on the slave: %v", err)
	}
	p := m.newProducer(t, "pg-replication")

	// The slave is admitted once the master has learnt it from the name
	// server: until then a SYNC_MASTER answers SLAVE_NOT_AVAILABLE.
	var acked []string
	deadline := time.Now().Add(60 * time.Second)
	const n = 64
	for i := 0; len(acked) < n; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d sends answered SEND_OK within 60s", len(acked), n)
		}
		body := fmt.Sprintf("ha-%03d", i)
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		acked = append(acked, body)
	}
	// The master's runtime figures show its one in-sync slave.
	rc := dialRaw(t, master)
	resp := rc.call(t, rawRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	rc.c.Close()
	var info struct {
		Table map[string]string `json:"table"`
	}
	if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &info) != nil {
		t.Fatalf("runtime info: %d %q", resp.Code, resp.Remark)
	}
	if tb := info.Table; tb["brokerRole"] != "SYNC_MASTER" || tb["inSyncSlaveNums"] != "1" || tb["haConnectionCount"] == "0" {
		t.Errorf("master runtime info: brokerRole %q inSyncSlaveNums %q haConnectionCount %q", tb["brokerRole"], tb["inSyncSlaveNums"], tb["haConnectionCount"])
	}
	m.kill()

	got := map[string]int{}
	for _, msg := range sl.pullAll(t, "cg-replication-reader", topic, 0) {
		got[string(msg.Body)]++
	}
	var lost []string
	for _, b := range acked {
		if got[b] == 0 {
			lost = append(lost, b)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged messages are not on the slave: %v", len(lost), len(acked), lost)
	}
	t.Logf("%d acknowledged messages read from the slave after the master's SIGKILL", len(acked))
}
