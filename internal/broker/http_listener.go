package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/internal/console"
	"github.com/spoolmq/spool/internal/metrics"
	"github.com/spoolmq/spool/internal/systopic"
)

// newTrafficStats builds the per-topic and per-group traffic stats
// (RocketMQ's BrokerStatsManager) of cfg. Their windows follow the wall
// clock: Options.Clock is what the broker's services decide by, and the
// sampler must not wait on a test's manual clock.
func newTrafficStats(cfg *Config) *brokerstats.Manager {
	return brokerstats.New(brokerstats.Options{
		ClusterName:   cfg.BrokerClusterName,
		DetailStats:   cfg.EnableDetailStat,
		IsSystemTopic: systopic.IsSystem,
	})
}

// httpListener is the metrics listener (metricsExporterType=PROM) with the
// console mounted on it.
type httpListener struct {
	srv  *metrics.Server
	done chan struct{}
}

// HTTPAddr is the address of the /metrics and console listener, or ""
// when metricsExporterType is not PROM (valid after Start).
func (b *Broker) HTTPAddr() string {
	if b.http == nil {
		return ""
	}
	return b.http.srv.Addr().String()
}

// startHTTP opens metricsPromExporterHost:metricsPromExporterPort when
// metricsExporterType is PROM and serves /metrics and the console there.
func (b *Broker) startHTTP() error {
	cfg := b.config()
	if !strings.EqualFold(cfg.MetricsExporterType, metrics.ExporterProm) {
		return nil
	}
	labels, err := metrics.ParseLabels(cfg.MetricsLabel)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	reg, err := metrics.NewRegistry(metrics.Options{
		Cluster:   cfg.BrokerClusterName,
		NodeID:    cfg.BrokerName,
		Labels:    labels,
		Source:    metrics.SourceFunc(b.metricsSnapshot),
		MaxTopics: cfg.MetricsTopicCardinalityLimit,
		MaxGroups: cfg.MetricsGroupCardinalityLimit,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	addr := metrics.Addr(cfg.MetricsPromExporterHost, cfg.MetricsPromExporterPort)
	srv, err := metrics.Listen(addr, reg)
	if err != nil {
		return fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	srv.Mux.Handle("/", console.New(consoleView{b}))
	h := &httpListener{srv: srv, done: make(chan struct{})}
	b.http = h
	go func() {
		defer close(h.done)
		if err := srv.Serve(); err != nil {
			b.logger.Warn("metrics listener", "err", err)
		}
	}()
	b.logger.Info("metrics and console listening", "addr", srv.Addr().String())
	return nil
}

// stopHTTP closes the listener, waiting for requests in progress until
// ctx ends.
func (b *Broker) stopHTTP(ctx context.Context) {
	if b.http == nil {
		return
	}
	if err := b.http.srv.Close(ctx); err != nil {
		b.logger.Warn("close metrics listener", "err", err)
	}
	<-b.http.done
}
