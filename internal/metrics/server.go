package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The metricsExporterType values RocketMQ knows; Spool serves PROM and
// treats the others as DISABLE.
const (
	ExporterDisable  = "DISABLE"
	ExporterOTLPGRPC = "OTLP_GRPC"
	ExporterProm     = "PROM"
	ExporterLog      = "LOG"
)

// DefaultPromPort is metricsPromExporterPort's default.
const DefaultPromPort = 5557

// Options build a Registry.
type Options struct {
	// Cluster and NodeID are the cluster, node_id labels of every series
	// (brokerClusterName and brokerName).
	Cluster, NodeID string
	// Labels are metricsLabel's extra labels (ParseLabels).
	Labels map[string]string
	// MaxTopics and MaxGroups cap the topics and consumer groups with
	// series; 0 is DefaultMaxTopics, DefaultMaxGroups.
	MaxTopics, MaxGroups int
	// Source gives the figures of each scrape.
	Source Source
	// NoRuntime leaves out the Go runtime and process collectors.
	NoRuntime bool
}

// legacyLabelName is the label-name syntax every Prometheus server
// accepts.
var legacyLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// NewRegistry returns a registry holding the broker collector (and, unless
// NoRuntime, the Go runtime and process collectors).
func NewRegistry(o Options) (*prometheus.Registry, error) {
	if o.Source == nil {
		return nil, errors.New("metrics: no Source")
	}
	constLabels := prometheus.Labels{LabelCluster: o.Cluster, LabelNodeType: NodeTypeBroker, LabelNodeID: o.NodeID}
	for k, v := range o.Labels {
		if !legacyLabelName.MatchString(k) {
			return nil, fmt.Errorf("metrics: label name %q is not valid", k)
		}
		if _, dup := constLabels[k]; dup {
			return nil, fmt.Errorf("metrics: label %q is set by the broker", k)
		}
		constLabels[k] = v
	}
	if o.MaxTopics <= 0 {
		o.MaxTopics = DefaultMaxTopics
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = DefaultMaxGroups
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(newCollector(o.Source, constLabels, o.MaxTopics, o.MaxGroups)); err != nil {
		return nil, err
	}
	if !o.NoRuntime {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return reg, nil
}

// Handler serves reg's exposition (the /metrics page).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Addr is the listen address of metricsPromExporterHost and
// metricsPromExporterPort; an empty host listens on every interface, as
// RocketMQ's does.
func Addr(host string, port int) string {
	if port <= 0 {
		port = DefaultPromPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Server serves /metrics (and whatever else the broker mounts on Mux, such
// as the console) on one listener.
type Server struct {
	Mux *http.ServeMux
	srv *http.Server
	ln  net.Listener
}

// Listen opens addr and mounts reg's exposition at /metrics; Serve starts
// answering.
func Listen(addr string, reg *prometheus.Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(reg))
	return &Server{Mux: mux, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until Close; it returns nil after Close.
func (s *Server) Serve() error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the listener and waits up to the context's deadline for
// scrapes in progress.
func (s *Server) Close(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}
