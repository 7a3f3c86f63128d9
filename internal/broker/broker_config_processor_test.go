package broker

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/remoting"
)

func (e *testEnv) updateConfig(body string) *remoting.Command {
	e.t.Helper()
	return e.invoke(goRequest(remoting.UpdateBrokerConfig, nil, []byte(body)))
}

// TestUpdateBrokerConfigStoreKeys changes store keys over the protocol and
// observes each effect on the running broker, then finds them persisted.
func TestUpdateBrokerConfigStoreKeys(t *testing.T) {
	e := startBroker(t, nil)
	e.createTopic("LIVE", 1)
	e.mustSend("LIVE", 0, "", strings.Repeat("x", 64))

	// maxMessageSize: the broker's send check and the store's both move.
	if r := e.updateConfig("maxMessageSize=32\n"); r.Code != remoting.Success {
		t.Fatalf("update maxMessageSize: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(sendV1("LIVE", 0, nil, []byte(strings.Repeat("x", 64)))); r.Code == remoting.Success || !strings.Contains(r.Remark, "32") {
		t.Fatalf("64-byte send under maxMessageSize=32: code %d remark %q", r.Code, r.Remark)
	}
	if got := e.b.store.Config().MaxMessageSize; got != 32 {
		t.Fatalf("store maxMessageSize = %d", got)
	}

	// defaultQueryMaxNum bounds a query that names no maximum.
	for i := 0; i < 3; i++ {
		e.invoke(sendV1("LIVE", 0, map[string]string{"KEYS": "k"}, []byte("q")))
	}
	e.waitDispatched("LIVE", 0, 4)
	q := map[string]string{"topic": "LIVE", "key": "k", "maxNum": "0", "beginTimestamp": "0", "endTimestamp": itoa64(1 << 62)}
	waitFor(t, "the index to find all three", func() bool {
		r := e.invoke(goRequest(remoting.QueryMessage, q, nil))
		return r.Code == remoting.Success && len(decodeRecords(t, r.Body)) == 3
	})
	if r := e.updateConfig("defaultQueryMaxNum=1\n"); r.Code != remoting.Success {
		t.Fatalf("update defaultQueryMaxNum: code %d remark %q", r.Code, r.Remark)
	}
	if r := e.invoke(goRequest(remoting.QueryMessage, q, nil)); len(decodeRecords(t, r.Body)) != 1 {
		t.Fatalf("query under defaultQueryMaxNum=1: code %d, %d records", r.Code, len(decodeRecords(t, r.Body)))
	}

	// Both persisted, with a broker key, in the default file.
	if r := e.updateConfig("autoCreateTopicEnable=false\nflushIntervalConsumeQueue=250\n"); r.Code != remoting.Success {
		t.Fatalf("update: code %d remark %q", r.Code, r.Remark)
	}
	props, err := config.LoadFile(DefaultConfigFile(e.dir))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"maxMessageSize": "32", "defaultQueryMaxNum": "1", "autoCreateTopicEnable": "false", "flushIntervalConsumeQueue": "250"}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("persisted %s=%q, want %q", k, props[k], v)
		}
	}
	if len(props) != len(want) {
		t.Errorf("persisted %v, want only the changed keys", props)
	}
	get := e.invoke(goRequest(remoting.GetBrokerConfig, nil, nil))
	if !strings.Contains(string(get.Body), "\nflushIntervalConsumeQueue=250\n") {
		t.Errorf("GET_BROKER_CONFIG does not show the change:\n%s", get.Body)
	}
}

func TestUpdateBrokerConfigRefusals(t *testing.T) {
	e := startBroker(t, nil)
	for body, name := range map[string]string{
		"mappedFileSizeCommitLog=4096\n":             "mappedFileSizeCommitLog",
		"storePathRootDir=/elsewhere\n":              "storePathRootDir",
		"flushDiskType=SYNC_FLUSH\nmaxMessageSize=9": "flushDiskType",
		"listenPort=1\n":                             "listenPort",
		"maxMessageSize=0\n":                         "maxMessageSize",
	} {
		r := e.updateConfig(body)
		if r.Code != remoting.InvalidParameter || !strings.Contains(r.Remark, name) {
			t.Errorf("%q: code %d remark %q", body, r.Code, r.Remark)
		}
	}
	if got := e.b.store.Config().MaxMessageSize; got != e.scfg.MaxMessageSize {
		t.Errorf("a refused update changed maxMessageSize to %d", got)
	}
	if _, err := os.Stat(DefaultConfigFile(e.dir)); !os.IsNotExist(err) {
		t.Errorf("a refused update wrote the config file: %v", err)
	}
}

// TestUpdateBrokerConfigPersistFailure: when the file cannot be written,
// nothing changes (the store's keys are restored) and the answer says so.
func TestUpdateBrokerConfigPersistFailure(t *testing.T) {
	e := startBroker(t, nil)
	blocker := filepath.Join(e.dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.b.cfgFile = filepath.Join(blocker, "broker.properties")
	r := e.updateConfig("maxMessageSize=32\nautoCreateTopicEnable=false\n")
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "not changed") {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	if got := e.b.store.Config().MaxMessageSize; got != e.scfg.MaxMessageSize {
		t.Errorf("store maxMessageSize %d after a failed persist", got)
	}
	if e.b.storeConfig().MaxMessageSize != e.scfg.MaxMessageSize || !e.b.config().AutoCreateTopicEnable {
		t.Error("broker keys changed after a failed persist")
	}
}

// TestUpdateBrokerConfigEditsStartFile: a broker started from a file
// persists into that file, keeping the operator's other lines.
func TestUpdateBrokerConfigEditsStartFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "broker.conf")
	orig := "# production broker\nbrokerName=broker-a\nfileReservedTime=48\n"
	if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, scfg := testConfig(), testkit.StoreConfig(filepath.Join(dir, "store"), testkit.Medium)
	b, err := New(cfg, Options{StoreConfig: scfg, ConfigFile: file, LocalNamesrv: newRecordingNamesrv(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, b: b, client: newBenchClient(), dir: scfg.StorePathRootDir, cfg: cfg, scfg: scfg}
	t.Cleanup(e.stop)
	if r := e.updateConfig("fileReservedTime=24\n"); r.Code != remoting.Success {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	got, _ := os.ReadFile(file)
	if string(got) != "# production broker\nbrokerName=broker-a\nfileReservedTime=24\n" {
		t.Fatalf("config file now:\n%s", got)
	}
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != orig {
		t.Fatalf("backup:\n%s", bak)
	}
	if b.store.Config().FileReservedTime != 24 {
		t.Fatal("store fileReservedTime not changed")
	}
}

func TestRegistrationAdvertisesBrokerIP2(t *testing.T) {
	e := startBroker(t, func(c *Config, _ *store.Config) { c.BrokerIP2 = "10.1.2.3" })
	waitFor(t, "a registration", func() bool { return e.ns.lastRegistration() != nil })
	// The HA listener binds the client port + 1, or any port when that one
	// is taken (the broker itself was started on any port).
	_, port, _ := net.SplitHostPort(e.b.repl.ln.Addr().String())
	want := "10.1.2.3:" + port
	if got := e.ns.lastRegistration().ExtFields["haServerAddr"]; got != want {
		t.Fatalf("haServerAddr = %q, want %q", got, want)
	}
}
