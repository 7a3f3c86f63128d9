package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// registrar registers the broker and its topics with every name server of
// namesrvAddr and with the in-process name server: the whole table at
// start and every registerNameServerPeriod (compressed when
// compressedRegister), and each created or updated topic on its own at
// once (an incremental registration, as RocketMQ's
// registerIncrementBrokerData: the name server adds the topics of the body
// and keeps the others). A deleted topic or a permission change sends the
// whole table again.
//
// Topic changes are collected into batches (see topicChanges); a request
// that created a topic, or sent to one whose batch is still on its way, is
// answered after its batch has been acknowledged by every name server (or
// registerBrokerTimeoutMills passed) and written to topics.json.
type registrar struct {
	b      *Broker
	local  LocalNamesrv
	client *transport.Client
	kick   chan struct{}
	mu     sync.Mutex // one registration round at a time

	changes topicChanges

	// base is canceled at shutdown so a hanging name server cannot hold
	// the periodic rounds.
	base   context.Context
	cancel context.CancelFunc
}

func newRegistrar(b *Broker, local LocalNamesrv) *registrar {
	base, cancel := context.WithCancel(context.Background())
	return &registrar{
		base:   base,
		cancel: cancel,
		b:      b,
		local:  local,
		// Every request to name servers and to the master (registration,
		// route and metadata queries) is signed with the inner credentials.
		client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second, Dial: b.dialer(),
			Prepare: func(req *remoting.Command) { b.authsrv.Sign(req) }}),
		kick: make(chan struct{}, 1),
		changes: topicChanges{
			pending: make(map[string]*routeBatch),
			work:    make(chan struct{}, 1),
		},
	}
}

// namesrvAddrs splits namesrvAddr on ';'.
func namesrvAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// trigger asks for a registration round soon (topic change).
func (r *registrar) trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *registrar) period() time.Duration {
	p := r.b.config().RegisterNameServerPeriod
	return millis(min(max(p, 10000), 60000))
}

func (r *registrar) timeout() time.Duration {
	t := r.b.config().RegisterBrokerTimeoutMills
	if t <= 0 {
		t = 24000
	}
	return millis(t)
}

// run registers periodically and on triggers until the broker stops (Start
// has done the first round).
func (r *registrar) run() {
	t := time.NewTimer(r.period())
	defer t.Stop()
	for {
		select {
		case <-r.b.stop:
			return
		case <-r.kick:
			r.round()
		case <-t.C:
			r.round()
			t.Reset(r.period())
		}
	}
}

func (r *registrar) round() {
	ctx, cancel := context.WithTimeout(r.base, r.timeout())
	defer cancel()
	if err := r.registerAll(ctx); err != nil {
		r.b.logger.Warn("register broker", "err", err)
	}
}

func (r *registrar) brokerFields() map[string]string {
	cfg := r.b.config()
	return map[string]string{
		"brokerName":  cfg.BrokerName,
		"brokerAddr":  r.b.addr,
		"clusterName": cfg.BrokerClusterName,
		"brokerId":    strconv.FormatInt(r.b.registeredBrokerID(), 10),
	}
}

// haServerAddr is the address replication would listen on, as RocketMQ
// advertises it: brokerIP2 (default: the advertised address's host) and
// haListenPort, which RocketMQ's start-up sets to listenPort+1.
func (r *registrar) haServerAddr() string {
	if a := r.b.sw.advertisedHA(); a != "" {
		return a
	}
	if a := r.b.repl.advertisedHA(); a != "" {
		return a
	}
	host, port, err := net.SplitHostPort(r.b.addr)
	if err != nil {
		return r.b.addr
	}
	if ip2 := strings.TrimSpace(r.b.config().BrokerIP2); ip2 != "" {
		host = ip2
	}
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// registerBody encodes a REGISTER_BROKER body holding table (topic
// permissions are masked by the broker permission when it is restricted)
// at data version version, in the compressed form when compressed.
func (r *registrar) registerBody(table map[string]*metadata.TopicConfig, version metadata.DataVersion, compressed bool) []byte {
	brokerPerm := r.b.config().BrokerPermission
	masked := !metadata.IsWriteable(brokerPerm) || !metadata.IsReadable(brokerPerm)
	body := namesrv.RegisterBrokerBody{FilterServerList: []string{}}
	w := &body.TopicConfigSerializeWrapper
	w.DataVersion = namesrv.DataVersion{StateVersion: version.StateVersion, Timestamp: version.Timestamp, Counter: version.Counter}
	w.TopicConfigTable = make(map[string]namesrv.TopicConfig, len(table))
	for k, tc := range table {
		perm := tc.Perm
		if masked {
			perm &= brokerPerm
		}
		w.TopicConfigTable[k] = namesrv.TopicConfig{
			TopicName: tc.TopicName, ReadQueueNums: int32(tc.ReadQueueNums), WriteQueueNums: int32(tc.WriteQueueNums),
			Perm: int32(perm), TopicFilterType: tc.TopicFilterType, TopicSysFlag: int32(tc.TopicSysFlag),
			Order: tc.Order, Attributes: tc.Attributes,
		}
	}
	return body.Encode(compressed)
}

func (r *registrar) registerRequest(body []byte, compressed bool) *remoting.Command {
	ext := r.brokerFields()
	ext["haServerAddr"] = r.haServerAddr()
	ext["compressed"] = strconv.FormatBool(compressed)
	ext["enableActingMaster"] = "false"
	ext["heartbeatTimeoutMillis"] = strconv.FormatInt(r.b.config().ChannelExpiredTimeout, 10)
	ext["bodyCrc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	return remoting.NewRequest(remoting.RegisterBroker, ext, body)
}

// registerAll registers the whole topic table with every name server, in
// parallel, and returns the joined failures.
func (r *registrar) registerAll(ctx context.Context) error {
	if !r.b.hasRole() {
		return nil // controller mode before its first role: not a route yet
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	compressed := r.b.config().CompressedRegister
	table, version := r.b.topics.Snapshot()
	body := r.registerBody(table, version, compressed)
	return r.each(ctx, func() *remoting.Command { return r.registerRequest(body, compressed) })
}

// registerTopics registers only the given topics (an incremental
// registration) at data version version.
func (r *registrar) registerTopics(ctx context.Context, topics map[string]*metadata.TopicConfig, version metadata.DataVersion) error {
	if !r.b.hasRole() {
		return nil // controller mode before its first role: not a route yet
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	body := r.registerBody(topics, version, false)
	return r.each(ctx, func() *remoting.Command { return r.registerRequest(body, false) })
}

// unregisterAll sends UNREGISTER_BROKER to every name server.
func (r *registrar) unregisterAll(ctx context.Context) error {
	if !r.b.hasRole() {
		return nil // controller mode before its first role: not a route yet
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.each(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.UnregisterBroker, r.brokerFields(), nil)
	})
}

func (r *registrar) each(ctx context.Context, build func() *remoting.Command) error {
	addrs := namesrvAddrs(r.b.config().NamesrvAddr)
	errs := make([]error, len(addrs)+1)
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := build() // signed by the client's Prepare
			resp, err := r.client.Invoke(ctx, a, req)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%w: %s %s: %w", ErrRegister, remoting.RequestName(req.Code), a, err)
			case resp.Code != remoting.Success:
				errs[i] = fmt.Errorf("%w: %s %s: code %d: %s", ErrRegister, remoting.RequestName(req.Code), a, resp.Code, resp.Remark)
			case req.Code == remoting.RegisterBroker:
				r.b.registered(resp)
			}
		}()
	}
	if r.local != nil {
		req := build()
		r.b.authsrv.Sign(req)
		if resp := r.local.Handle(req); resp == nil {
			errs[len(addrs)] = fmt.Errorf("%w: %s in-process: no answer", ErrRegister, remoting.RequestName(req.Code))
		} else if resp.Code != remoting.Success {
			errs[len(addrs)] = fmt.Errorf("%w: %s in-process: code %d: %s", ErrRegister, remoting.RequestName(req.Code), resp.Code, resp.Remark)
		} else if req.Code == remoting.RegisterBroker {
			r.b.registered(resp)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopRounds cancels periodic rounds in progress.
func (r *registrar) stopRounds() { r.cancel() }

func (r *registrar) close() { r.client.Close() }
