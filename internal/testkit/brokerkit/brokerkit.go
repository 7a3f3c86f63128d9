// Package brokerkit starts brokers for tests outside the broker package:
// a broker with options over a store in a (temporary) directory, shut
// down when the test ends.
//
// Only tests import it (internal/layering checks it); the broker's own
// tests cannot, as it imports the broker.
package brokerkit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/testkit"
	"github.com/spoolmq/spool/internal/vfs"
)

// Config is what Start builds a broker from; the zero value is a broker
// named broker-a of DefaultCluster on 127.0.0.1:0 over a Medium store in
// a temporary directory, registered with no name server.
type Config struct {
	// Dir is the store's root; empty = a new t.TempDir().
	Dir string
	// Size is the store's shape.
	Size testkit.Size
	// Store and Broker adjust the configurations before the start.
	Store  func(*store.Config)
	Broker func(*broker.Config)
	// FS is what the store is opened on (nil = vfs.Default).
	FS vfs.FS
	// Options are the broker's collaborators (Clock, LocalNamesrv,
	// Logger, ConfigFile); Start sets Store and StoreConfig.
	Options broker.Options
}

// Broker is a started broker and what it was built from.
type Broker struct {
	*broker.Broker
	Store       *store.DefaultMessageStore
	Dir         string
	Config      broker.Config
	StoreConfig store.Config
	stopped     bool
}

// Start opens the store, builds and starts the broker; the test fails on
// an error. The broker is shut down when the test ends, unless Stop ran.
func Start(t testing.TB, c Config) *Broker {
	t.Helper()
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	sc := testkit.StoreConfig(c.Dir, c.Size)
	if c.Store != nil {
		c.Store(&sc)
	}
	bc := broker.DefaultConfig()
	bc.BrokerName = "broker-a"
	bc.BrokerClusterName = "DefaultCluster"
	bc.BindAddress = "127.0.0.1"
	bc.ListenPort = 0
	bc.NamesrvAddr = ""
	if c.Broker != nil {
		c.Broker(&bc)
	}
	fs := c.FS
	if fs == nil {
		fs = vfs.Default
	}
	logger := c.Options.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st, err := store.Open(sc, fs, logger)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	opts := c.Options
	opts.Store, opts.StoreConfig, opts.Logger = st, sc, logger
	b, err := broker.New(bc, opts)
	if err != nil {
		st.Shutdown()
		t.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	kb := &Broker{Broker: b, Store: st, Dir: c.Dir, Config: bc, StoreConfig: sc}
	t.Cleanup(func() { kb.Stop(t) })
	return kb
}

// Stop shuts the broker and its store down (once), keeping the
// directory.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	if b.stopped {
		return
	}
	b.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil && err != broker.ErrShutdown {
		t.Errorf("broker shutdown: %v", err)
	}
}
