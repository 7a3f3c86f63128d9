package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// runAndUpdate starts a broker as the broker command would, changes keys
// with UPDATE_BROKER_CONFIG and shuts it down.
func runAndUpdate(t *testing.T, f *serveFlags, update string) {
	t.Helper()
	b := startServeBroker(t, f)
	cli := transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second})
	defer cli.Close()
	if _, err := call(cli, b.Addr(), remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte(update))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// startServeBroker starts a broker, without a name server, configured
// from f as the serving commands configure it.
func startServeBroker(t *testing.T, f *serveFlags) *broker.Broker {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	props, err := loadProps(f)
	if err != nil {
		t.Fatal(err)
	}
	bc, sc, cfgFile, err := brokerConfigs(f, props, logger)
	if err != nil {
		t.Fatal(err)
	}
	bc.NamesrvAddr = ""
	b, err := broker.New(bc, broker.Options{StoreConfig: sc, ConfigFile: cfgFile, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	return b
}

func reload(t *testing.T, f *serveFlags) (broker.Config, int, int) {
	t.Helper()
	props, err := loadProps(f)
	if err != nil {
		t.Fatal(err)
	}
	bc, sc, _, err := brokerConfigs(f, props, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return bc, sc.FlushIntervalCommitLog, sc.FileReservedTime
}

// TestRestartKeepsLiveChanges: keys changed at run time survive a restart,
// whether the broker was started without a file or with -c; the command
// line still wins over them.
func TestRestartKeepsLiveChanges(t *testing.T) {
	t.Run("no file", func(t *testing.T) {
		dir := t.TempDir()
		f := &serveFlags{store: dir, listen: "127.0.0.1:0"}
		runAndUpdate(t, f, "flushIntervalCommitLog=123\nautoCreateTopicEnable=false\n")
		if _, err := os.Stat(filepath.Join(dir, "config", "broker.properties")); err != nil {
			t.Fatal(err)
		}
		bc, flush, _ := reload(t, &serveFlags{store: dir, listen: "127.0.0.1:0"})
		if flush != 123 || bc.AutoCreateTopicEnable {
			t.Fatalf("after restart: flushIntervalCommitLog=%d autoCreateTopicEnable=%v", flush, bc.AutoCreateTopicEnable)
		}
		_, flush, _ = reload(t, &serveFlags{store: dir, listen: "127.0.0.1:0", sets: []string{"flushIntervalCommitLog=77"}})
		if flush != 77 {
			t.Fatalf("--set lost to the saved key: %d", flush)
		}
	})
	t.Run("with -c", func(t *testing.T) {
		dir := t.TempDir()
		conf := filepath.Join(dir, "broker.conf")
		store := filepath.Join(dir, "store")
		if err := os.WriteFile(conf, []byte("storePathRootDir="+store+"\nfileReservedTime=48\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f := &serveFlags{configFile: conf, listen: "127.0.0.1:0"}
		runAndUpdate(t, f, "fileReservedTime=12\n")
		if _, flush, reserved := reload(t, &serveFlags{configFile: conf, listen: "127.0.0.1:0"}); reserved != 12 || flush != 500 {
			t.Fatalf("after restart: fileReservedTime=%d flushIntervalCommitLog=%d", reserved, flush)
		}
		if _, err := os.Stat(filepath.Join(store, "config", "broker.properties")); !os.IsNotExist(err) {
			t.Fatalf("started with -c, yet wrote the store's file: %v", err)
		}
	})
}
