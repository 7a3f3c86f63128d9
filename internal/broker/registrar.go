package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// registerBody is the REGISTER_BROKER body (uncompressed form).
type registerBody struct {
	TopicConfigSerializeWrapper struct {
		TopicConfigTable map[string]*TopicConfig `json:"topicConfigTable"`
		DataVersion      DataVersion             `json:"dataVersion"`
	} `json:"topicConfigSerializeWrapper"`
	FilterServerList []string `json:"filterServerList"`
}

// registrar registers the broker and its topics with every name server of
// namesrvAddr and with the in-process name server: at start, every
// registerNameServerPeriod, and at once when the topic table changes.
type registrar struct {
	b      *Broker
	local  LocalNamesrv
	client *transport.Client
	kick   chan struct{}
	mu     sync.Mutex // one registration round at a time

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
		client: transport.NewClient(transport.ClientConfig{DialTimeout: 3 * time.Second}),
		kick:   make(chan struct{}, 1),
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
		"brokerId":    strconv.FormatInt(cfg.BrokerID, 10),
	}
}

// haServerAddr is the address replication would listen on, as RocketMQ
// advertises it: brokerIP2 (default: the advertised address's host) and
// haListenPort, which RocketMQ's start-up sets to listenPort+1.
func (r *registrar) haServerAddr() string {
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

// registerBody builds the registration body from the topic table (topic
// permissions are masked by the broker permission when it is restricted).
func (r *registrar) body() ([]byte, error) {
	cfg := r.b.config()
	table, version := r.b.topics.Snapshot()
	var body registerBody
	body.FilterServerList = []string{}
	body.TopicConfigSerializeWrapper.DataVersion = version
	body.TopicConfigSerializeWrapper.TopicConfigTable = table
	if !isWriteable(cfg.BrokerPermission) || !isReadable(cfg.BrokerPermission) {
		masked := make(map[string]*TopicConfig, len(table))
		for k, tc := range table {
			c := tc.clone()
			c.Perm &= cfg.BrokerPermission
			masked[k] = c
		}
		body.TopicConfigSerializeWrapper.TopicConfigTable = masked
	}
	return json.Marshal(&body)
}

func (r *registrar) registerRequest(body []byte) *remoting.Command {
	ext := r.brokerFields()
	ext["haServerAddr"] = r.haServerAddr()
	ext["compressed"] = "false"
	ext["enableActingMaster"] = "false"
	ext["heartbeatTimeoutMillis"] = strconv.FormatInt(r.b.config().ChannelExpiredTimeout, 10)
	ext["bodyCrc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	return remoting.NewRequest(remoting.RegisterBroker, ext, body)
}

// registerAll registers with every name server, in parallel, and returns
// the joined failures.
func (r *registrar) registerAll(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	body, err := r.body()
	if err != nil {
		return fmt.Errorf("%w: encode body: %w", ErrRegister, err)
	}
	return r.each(ctx, func() *remoting.Command { return r.registerRequest(body) })
}

// unregisterAll sends UNREGISTER_BROKER to every name server.
func (r *registrar) unregisterAll(ctx context.Context) error {
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
			req := build()
			resp, err := r.client.Invoke(ctx, a, req)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%w: %s %s: %w", ErrRegister, remoting.RequestName(req.Code), a, err)
			case resp.Code != remoting.Success:
				errs[i] = fmt.Errorf("%w: %s %s: code %d: %s", ErrRegister, remoting.RequestName(req.Code), a, resp.Code, resp.Remark)
			}
		}()
	}
	if r.local != nil {
		req := build()
		if resp := r.local.Handle(req); resp == nil {
			errs[len(addrs)] = fmt.Errorf("%w: %s in-process: no answer", ErrRegister, remoting.RequestName(req.Code))
		} else if resp.Code != remoting.Success {
			errs[len(addrs)] = fmt.Errorf("%w: %s in-process: code %d: %s", ErrRegister, remoting.RequestName(req.Code), resp.Code, resp.Remark)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopRounds cancels periodic rounds in progress.
func (r *registrar) stopRounds() { r.cancel() }

func (r *registrar) close() { r.client.Close() }
