package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/authserve"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/tlsconf"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// ctlRun is one controller node: its raft node, its remoting face and the
// client its NOTIFY_BROKER_ROLE_CHANGED pushes go out on. The standalone
// controller and the name server with enableControllerInNamesrv=true both
// run one; the caller registers ctl's handlers on its transport server
// and calls serving once the port is open.
type ctlRun struct {
	cc         controller.Config
	self       consensus.Peer
	node       *consensus.Node
	ctl        *controller.Controller
	client     *transport.Client
	advertised atomic.Pointer[string]
	cancel     context.CancelFunc
	logger     *slog.Logger
}

// openController validates the controller keys, opens the raft node and
// builds the controller. svc signs what the controller sends (nil: no
// access control).
func openController(cc controller.Config, tc *tlsconf.Config, svc *authserve.Service, logger *slog.Logger) (*ctlRun, error) {
	if !strings.EqualFold(cc.Type, "DLedger") {
		return nil, fmt.Errorf("controllerType=%s is not built; Spool's controller replicates with raft in place of DLedger", cc.Type)
	}
	peers, err := consensus.ParsePeers(cc.Peers)
	if err != nil {
		return nil, err
	}
	if cc.SelfID == "" {
		return nil, errors.New("controllerDLegerSelfId is not set")
	}
	r := &ctlRun{cc: cc, logger: logger}
	for _, p := range peers {
		if p.ID == cc.SelfID {
			r.self = p
		}
	}
	dial, err := controllerDialer(tc)
	if err != nil {
		return nil, err
	}
	// The leader records its remoting address before it serves; the
	// address is known once the port is open.
	hook := func(n *consensus.Node) error {
		a := r.advertised.Load()
		if a == nil {
			return errors.New("remoting port not open yet")
		}
		return controller.LeaderHook(*a)(n)
	}
	r.node, err = consensus.Open(consensus.Config{ID: cc.SelfID, Peers: peers, Dir: cc.StorePath, OnLeader: hook, LogOutput: os.Stderr})
	if err != nil {
		return nil, err
	}
	// What the controller sends brokers is signed with the inner
	// credentials, and dialed with tls.client.* when tls.enable is on.
	r.client = transport.NewClient(transport.ClientConfig{Logger: logger, Dial: dial, Prepare: svc.Sign})
	r.ctl = controller.New(r.node, controller.Options{
		Group:        cc.Group,
		Unclean:      cc.EnableElectUncleanMaster,
		ScanInterval: time.Duration(cc.ScanNotActiveBrokerInterval) * time.Millisecond,
		ElectRetries: cc.ElectMasterMaxRetryCount,
		Logger:       logger,
		Notify: func(addr string, req *remoting.Command) {
			go func() {
				if err := r.client.InvokeOneway(addr, req); err != nil {
					logger.Warn("NOTIFY_BROKER_ROLE_CHANGED not sent", "broker", addr, "err", err)
				}
			}()
		},
	})
	return r, nil
}

// configBody is the GET_CONTROLLER_CONFIG answer's body.
func (r *ctlRun) configBody() []byte { return controller.ConfigBody(config.Dump(&r.cc)) }

// serving records the remoting address the port was bound to and starts
// the leader's scan; it returns the advertised address.
func (r *ctlRun) serving(bound net.Addr) string {
	adv := advertise(bound, r.self.Addr)
	r.advertised.Store(&adv)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.ctl.Run(ctx)
	return adv
}

// close stops the scan, the client and the raft node (after the
// transport server is shut down).
func (r *ctlRun) close() error {
	if r.cancel != nil {
		r.cancel()
	}
	r.client.Close()
	return r.node.Close()
}

// namesrvRun is a running name server and, with
// enableControllerInNamesrv=true, the controller served on its port.
type namesrvRun struct {
	ns   *namesrv.Server
	addr net.Addr
	ctl  *ctlRun // nil: no controller
}

// startNamesrv binds the name server's keys (and, when
// enableControllerInNamesrv=true, the controller's: RocketMQ reads both
// from the one file) and serves on listen ("": 0.0.0.0:listenPort).
func startNamesrv(props map[string]string, listen string, tc *tlsconf.Config, logger *slog.Logger) (*namesrvRun, error) {
	nc := namesrv.DefaultConfig()
	cc := controller.DefaultConfig()
	var na namesrvAuth
	var lk limitKeys
	targets := []any{&nc, &na, &lk}
	if isTrueProp(props["enableControllerInNamesrv"]) {
		targets = append(targets, &cc)
	}
	report, err := config.Bind(props, targets...)
	if err != nil {
		return nil, err
	}
	if len(report.Unbuilt) > 0 {
		logger.Warn("RocketMQ keys that Spool does not implement yet are ignored", "keys", strings.Join(report.Unbuilt, ","))
	}
	if listen == "" {
		listen = fmt.Sprintf("0.0.0.0:%d", nc.ListenPort)
	}
	opts, svc, err := namesrvAccessService(na, nc, listen, tc, lk.serverConfig(na.AuthenticationEnabled), logger)
	if err != nil {
		return nil, err
	}
	r := &namesrvRun{}
	if nc.EnableControllerInNamesrv {
		// The controller answers on the name server's port.
		cc.ListenPort = nc.ListenPort
		// The controller's pushes are signed with the name server's inner
		// credentials when access control is on.
		if r.ctl, err = openController(cc, tc, svc, logger.With("component", "controller")); err != nil {
			return nil, fmt.Errorf("enableControllerInNamesrv: %w", err)
		}
		body := r.ctl.configBody()
		opts = append(opts, namesrv.WithBeside(func(ts *transport.Server, own transport.Handler) {
			r.ctl.ctl.RegisterBeside(ts, body, own)
		}))
	}
	if r.ns, err = namesrv.New(nc, logger, opts...); err != nil {
		if r.ctl != nil {
			r.ctl.close()
		}
		return nil, err
	}
	if r.addr, err = serveNamesrv(r.ns, listen, tc, logger); err != nil {
		r.shutdown()
		return nil, err
	}
	if r.ctl != nil {
		adv := r.ctl.serving(r.addr)
		logger.Info("name server serving, with the controller", "addr", r.addr.String(), "controller", cc.SelfID, "remoting", adv, "raft", r.ctl.self.Addr, "store", cc.StorePath)
	} else {
		logger.Info("name server serving", "addr", r.addr.String())
	}
	return r, nil
}

// shutdown stops the name server and then the controller.
func (r *namesrvRun) shutdown() error {
	err := r.ns.Shutdown()
	if r.ctl != nil {
		if cerr := r.ctl.close(); err == nil {
			err = cerr
		}
	}
	return err
}

func isTrueProp(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
