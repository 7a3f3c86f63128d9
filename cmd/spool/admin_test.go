package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// adminFixture is one `spool standalone` process the admin commands run
// against.
type adminFixture struct {
	t          *testing.T
	ns, addr   string
	brokerName string
	dir        string
}

// run executes `spool admin -n NS args...` in this process and returns
// what it printed.
func (f *adminFixture) run(args ...string) (string, error) {
	cmd := adminCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"-n", f.ns}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// ok runs a command that must succeed.
func (f *adminFixture) ok(args ...string) string {
	f.t.Helper()
	out, err := f.run(args...)
	if err != nil {
		f.t.Fatalf("admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// json runs a command with --output json and decodes what it printed.
func (f *adminFixture) json(v any, args ...string) {
	f.t.Helper()
	out := f.ok(append(args, "--output", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		f.t.Fatalf("admin %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// contains fails unless out has every want.
func (f *adminFixture) contains(what, out string, want ...string) {
	f.t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			f.t.Errorf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// columns fails unless out has a line whose fields are exactly want.
func (f *adminFixture) columns(what, out string, want ...string) {
	f.t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == strings.Join(want, " ") {
			return
		}
	}
	f.t.Errorf("%s: no line with the columns %q:\n%s", what, want, out)
}

// refusedOrOK accepts either a success or an error that names the request
// and what the broker answered (requests other brokers' versions serve).
func (f *adminFixture) refusedOrOK(request string, args ...string) (string, bool) {
	f.t.Helper()
	out, err := f.run(args...)
	if err == nil {
		return out, true
	}
	if !strings.Contains(err.Error(), request) || !strings.Contains(err.Error(), "the broker answered code") {
		f.t.Fatalf("admin %s: %v", strings.Join(args, " "), err)
	}
	return err.Error(), false
}

// refusedAnyOrOK is refusedOrOK for a command that sends several
// requests: it succeeds, or the broker refuses one of requests.
func (f *adminFixture) refusedAnyOrOK(requests []string, args ...string) (string, bool) {
	f.t.Helper()
	out, err := f.run(args...)
	if err == nil {
		return out, true
	}
	for _, r := range requests {
		if strings.Contains(err.Error(), r) && strings.Contains(err.Error(), "the broker answered code") {
			return err.Error(), false
		}
	}
	f.t.Fatalf("admin %s: %v", strings.Join(args, " "), err)
	return "", false
}

// startStandalone starts `spool standalone` with extra arguments.
func startStandalone(t *testing.T, extra ...string) *adminFixture {
	t.Helper()
	return startStandaloneWith(t, func() []string { return extra })
}

// startStandaloneWith starts a standalone process with the extra arguments
// extra returns, and starts it again on other ports (extra is called
// again) when one of its ports was taken between being found free and
// being bound: another test's connection may take it meanwhile.
func startStandaloneWith(t *testing.T, extra func() []string) *adminFixture {
	t.Helper()
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		f, out, taken := tryStandalone(t, dir, extra())
		if f != nil {
			return f
		}
		if !taken || attempt == 5 {
			t.Fatalf("the standalone broker did not register:\n%s", out)
		}
		t.Logf("a port was taken before the standalone bound it, starting again:\n%s", out)
		if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
			t.Fatal(err)
		}
	}
}

// tryStandalone starts a standalone process on fresh loopback ports and
// waits for its broker to register; taken: it exited because a port was in
// use.
func tryStandalone(t *testing.T, dir string, extra []string) (f *adminFixture, output string, taken bool) {
	t.Helper()
	addrs := loopbackAddrs(t, 2)
	out := &syncBuf{}
	cmd := exec.Command(os.Args[0], append([]string{"standalone", "--store", filepath.Join(dir, "store"),
		"--namesrv-listen", addrs[0], "--listen", addrs[1]}, extra...)...)
	cmd.Env = append(os.Environ(), "SPOOL_TEST_RUN_MAIN=1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	registered := false
	defer func() {
		if !registered {
			cmd.Process.Kill()
			<-exited
		}
	}()
	f = &adminFixture{t: t, ns: addrs[0], dir: dir}
	cli := transport.NewClient(transport.ClientConfig{DialTimeout: time.Second})
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return nil, out.String(), strings.Contains(out.String(), "address already in use")
		default:
		}
		if bs, err := clusterBrokers(cli, []string{f.ns}); err == nil {
			for name, a := range bs {
				f.brokerName, f.addr = name, a
			}
			if f.addr != "" {
				registered = true
				t.Cleanup(func() {
					cmd.Process.Kill()
					<-exited
					if t.Failed() {
						t.Logf("standalone output:\n%s", out.String())
					}
				})
				return f, "", false
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, out.String(), false
}

// TestAdminCommands runs every mqadmin-named command against one
// standalone process and checks its columns and its -o json form.
func TestAdminCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone process")
	}
	f := startStandalone(t)
	t.Run("topics", f.topicCommandsTest)
	t.Run("messages", f.messageCommandsTest)
	t.Run("groups", f.groupCommandsTest)
	t.Run("brokers", f.brokerCommandsTest)
	t.Run("namesrv", f.namesrvCommandsTest)
	t.Run("legacy", f.legacyCommandsTest)
}

func (f *adminFixture) topicCommandsTest(t *testing.T) {
	f.t = t
	out := f.ok("updateTopic", "-c", "DefaultCluster", "-t", "AdminT", "-r", "4", "-w", "4")
	f.contains("updateTopic", out, "create topic to "+f.addr+" success.",
		"TopicConfig [topicName=AdminT, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={}]")
	var created struct {
		Brokers     []string `json:"brokers"`
		TopicConfig struct {
			TopicName     string `json:"topicName"`
			ReadQueueNums int    `json:"readQueueNums"`
			Perm          int    `json:"perm"`
		} `json:"topicConfig"`
	}
	f.json(&created, "updateTopic", "-b", f.addr, "-t", "AdminT", "-r", "4", "-w", "4", "-p", "6")
	if len(created.Brokers) != 1 || created.Brokers[0] != f.addr || created.TopicConfig.ReadQueueNums != 4 || created.TopicConfig.Perm != 6 {
		t.Errorf("updateTopic json: %+v", created)
	}
	if _, err := f.run("updateTopic", "-t", "X"); err == nil || !strings.Contains(err.Error(), "-b BROKER_ADDR or -c CLUSTER_NAME") {
		t.Errorf("updateTopic without -b/-c: %v", err)
	}

	out = f.ok("topicList")
	if !regexp.MustCompile(`(?m)^AdminT$`).MatchString(out) {
		t.Errorf("topicList lacks AdminT:\n%s", out)
	}
	var tl struct {
		TopicList []string `json:"topicList"`
	}
	f.json(&tl, "topicList")
	if !strings.Contains(strings.Join(tl.TopicList, ","), "AdminT") {
		t.Errorf("topicList json: %v", tl)
	}
	out = f.ok("topicList", "-c")
	f.columns("topicList -c header", out, "#Cluster", "Name", "#Topic", "#Consumer", "Group")
	f.columns("topicList -c row", out, "DefaultCluster", "AdminT")

	out = f.ok("topicRoute", "-t", "AdminT", "-l")
	f.columns("topicRoute -l header", out, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
	f.columns("topicRoute -l row", out, "DefaultCluster", f.brokerName, "{0:"+f.addr+"}", "4", "4", "6")
	f.contains("topicRoute", f.ok("topicRoute", "-t", "AdminT"), `"brokerName": "`+f.brokerName+`"`)
	var rt route
	f.json(&rt, "topicRoute", "-t", "AdminT")
	if len(rt.QueueDatas) != 1 || rt.QueueDatas[0].ReadQueueNums != 4 || rt.masterAddr(f.brokerName) != f.addr {
		t.Errorf("topicRoute json: %+v", rt)
	}

	out = f.ok("topicClusterList", "-t", "AdminT")
	f.columns("topicClusterList", out, "DefaultCluster")
	var clusters []string
	f.json(&clusters, "topicClusterList", "-t", "AdminT")
	if len(clusters) != 1 || clusters[0] != "DefaultCluster" {
		t.Errorf("topicClusterList json: %v", clusters)
	}

	if out, ok := f.refusedOrOK("GET_TOPIC_STATS_INFO (202)", "topicStatus", "-t", "AdminT"); ok {
		f.columns("topicStatus header", out, "#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset", "#Last", "Updated")
		f.columns("topicStatus row", out, f.brokerName, "0", "0", "0")
		var rows []map[string]any
		f.json(&rows, "topicStatus", "-t", "AdminT")
		if len(rows) != 4 || rows[0]["brokerName"] != f.brokerName {
			t.Errorf("topicStatus json: %v", rows)
		}
	}

	list := filepath.Join(f.dir, "topics.json")
	if err := os.WriteFile(list, []byte(`[{"topicName":"ListT1","readQueueNums":2,"writeQueueNums":2,"perm":6},`+
		`{"topicName":"ListT2","readQueueNums":1,"writeQueueNums":1,"perm":6}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out = f.ok("updateTopicList", "-c", "DefaultCluster", "-f", list)
	f.contains("updateTopicList", out, "submit batch of topic config to "+f.addr+" success, please check the result later.")
	var ul struct {
		Topics []string `json:"topics"`
	}
	f.json(&ul, "updateTopicList", "-b", f.addr, "-f", list)
	if strings.Join(ul.Topics, ",") != "ListT1,ListT2" {
		t.Errorf("updateTopicList json: %+v", ul)
	}
	f.columns("topicRoute of a listed topic", f.ok("topicRoute", "-t", "ListT1", "-l"), "DefaultCluster", f.brokerName, "{0:"+f.addr+"}", "2", "2", "6")

	out = f.ok("deleteTopic", "-c", "DefaultCluster", "-t", "ListT2")
	f.contains("deleteTopic", out, "delete topic [ListT2] from cluster [DefaultCluster] success.", "delete topic [ListT2] from NameServer success.")
	if regexp.MustCompile(`(?m)^ListT2$`).MatchString(f.ok("topicList")) {
		t.Errorf("ListT2 still listed after deleteTopic")
	}
	var del map[string]any
	f.json(&del, "deleteTopic", "-c", "DefaultCluster", "-t", "ListT2")
	if del["topic"] != "ListT2" || del["cluster"] != "DefaultCluster" {
		t.Errorf("deleteTopic json: %v", del)
	}
}

func (f *adminFixture) namesrvCommandsTest(t *testing.T) {
	f.t = t
	out := f.ok("wipeWritePerm", "-b", f.brokerName)
	m := regexp.MustCompile(`wipe write perm of broker\[` + regexp.QuoteMeta(f.brokerName) + `\] in name server\[` + regexp.QuoteMeta(f.ns) + `\] OK, (\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("wipeWritePerm: %q", out)
	}
	f.columns("route after wipeWritePerm", f.ok("topicRoute", "-t", "AdminT", "-l"), "DefaultCluster", f.brokerName, "{0:"+f.addr+"}", "4", "4", "4")
	if _, err := f.run("sendMessage", "-t", "AdminT", "-p", "x"); err == nil || !strings.Contains(err.Error(), "no writable queue") {
		t.Errorf("sendMessage to a drained broker: %v", err)
	}
	var wp struct {
		BrokerName  string `json:"brokerName"`
		NameServers []struct {
			NameServer string `json:"nameServer"`
			TopicCount int    `json:"topicCount"`
		} `json:"nameServers"`
	}
	f.json(&wp, "addWritePerm", "-b", f.brokerName)
	if wp.BrokerName != f.brokerName || len(wp.NameServers) != 1 || wp.NameServers[0].TopicCount == 0 {
		t.Errorf("addWritePerm json: %+v", wp)
	}
	f.columns("route after addWritePerm", f.ok("topicRoute", "-t", "AdminT", "-l"), "DefaultCluster", f.brokerName, "{0:"+f.addr+"}", "4", "4", "6")
	f.contains("addWritePerm", f.ok("addWritePerm", "-b", f.brokerName), "add write perm of broker["+f.brokerName+"] in name server["+f.ns+"] OK, ")
	f.json(&wp, "wipeWritePerm", "-b", "no-such-broker")
	if wp.NameServers[0].TopicCount != 0 {
		t.Errorf("wipeWritePerm of an unknown broker: %+v", wp)
	}

	out = f.ok("getNamesrvConfig")
	f.contains("getNamesrvConfig", out, "============"+f.ns+"============")
	f.columns("getNamesrvConfig", out, "enableTopicList", "=", "true")
	out = f.ok("updateNamesrvConfig", "-k", "enableTopicList", "-v", "false")
	f.contains("updateNamesrvConfig", out, "update name server config success!", "enableTopicList : false")
	var cfg map[string]map[string]string
	f.json(&cfg, "getNamesrvConfig")
	if cfg[f.ns]["enableTopicList"] != "false" {
		t.Errorf("getNamesrvConfig json after update: %v", cfg)
	}
	var upd map[string]any
	f.json(&upd, "updateNamesrvConfig", "-k", "enableTopicList", "-v", "true")
	if upd["key"] != "enableTopicList" || upd["value"] != "true" {
		t.Errorf("updateNamesrvConfig json: %v", upd)
	}
	if _, err := f.run("updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x"); err == nil || !strings.Contains(err.Error(), "Can not update config in black list.") {
		t.Errorf("updateNamesrvConfig of a black-listed key: %v", err)
	}
	if _, err := f.run("updateNamesrvConfig", "-k", "listenPort", "-v", "1"); err == nil || !strings.Contains(err.Error(), "listenPort") {
		t.Errorf("updateNamesrvConfig of a key not live: %v", err)
	}
}

func (f *adminFixture) legacyCommandsTest(t *testing.T) {
	f.t = t
	f.contains("create-topic", f.ok("create-topic", "LegacyT", "--queues", "2"), "topic LegacyT: 2 queues, perm 6")
	if !regexp.MustCompile(`(?m)^LegacyT$`).MatchString(f.ok("topics")) {
		t.Errorf("topics lacks LegacyT")
	}
	f.contains("route", f.ok("route", "LegacyT"), `"readQueueNums":2`)
	f.contains("runtime", f.ok("runtime"), "# "+f.brokerName, "brokerVersionDesc")
	f.contains("broker-config", f.ok("broker-config"), "# "+f.brokerName, "listenPort=")
	f.contains("delete-topic", f.ok("delete-topic", "LegacyT"), "topic LegacyT deleted")
	if _, err := f.run("topicRoute", "-t", "LegacyT"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("code %d", remoting.TopicNotExist)) {
		t.Errorf("route of a deleted topic: %v", err)
	}
}
