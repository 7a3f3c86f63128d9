package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/authserve"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// controllerCmd is `spool controller`: a standalone controller of
// RocketMQ's controller mode, one member of a raft group.
func controllerCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "run a controller (RocketMQ controller mode): broker ids, masters, epochs and sync-state sets, replicated with raft",
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, stop, props, err := begin(f)
			if err != nil {
				return err
			}
			tc, err := takeTLS(props)
			if err != nil {
				return err
			}
			cc := controller.DefaultConfig()
			var ca namesrvAuth
			var lk limitKeys
			report, err := config.Bind(props, &cc, &ca, &lk)
			if err != nil {
				return err
			}
			if len(report.Unbuilt) > 0 {
				logger.Warn("RocketMQ keys that Spool does not implement yet are ignored", "keys", strings.Join(report.Unbuilt, ","))
			}
			if !strings.EqualFold(cc.Type, "DLedger") {
				return fmt.Errorf("controllerType=%s is not built; Spool's controller replicates with raft in place of DLedger", cc.Type)
			}
			peers, err := consensus.ParsePeers(cc.Peers)
			if err != nil {
				return err
			}
			if cc.SelfID == "" {
				return errors.New("controllerDLegerSelfId is not set")
			}
			listen := f.listen
			if listen == "" {
				listen = fmt.Sprintf("0.0.0.0:%d", cc.ListenPort)
			}
			var self consensus.Peer
			for _, p := range peers {
				if p.ID == cc.SelfID {
					self = p
				}
			}

			// The leader records its remoting address before it serves;
			// the address is known once the port is open.
			var advertised atomic.Pointer[string]
			hook := func(n *consensus.Node) error {
				a := advertised.Load()
				if a == nil {
					return errors.New("remoting port not open yet")
				}
				return controller.LeaderHook(*a)(n)
			}
			node, err := consensus.Open(consensus.Config{ID: cc.SelfID, Peers: peers, Dir: cc.StorePath, OnLeader: hook, LogOutput: os.Stderr})
			if err != nil {
				return err
			}
			lim := lk.serverConfig(ca.AuthenticationEnabled)
			lim.Logger = logger
			var svc *authserve.Service // nil: no access control
			if ca.on() {
				if err := plaintextRefusal(listen, tc, ca.AuthAllowPlaintext); err != nil {
					return fmt.Errorf("controller: %w", err)
				}
				if svc, err = ca.open(filepath.Join(cc.StorePath, "auth"), logger); err != nil {
					return fmt.Errorf("controller: %w", err)
				}
				lim.Authorize = svc.Hook()
			}
			dial, err := controllerDialer(tc)
			if err != nil {
				return err
			}
			// What the controller sends brokers is signed with the inner
			// credentials, and dialed with tls.client.* when tls.enable is on.
			client := transport.NewClient(transport.ClientConfig{Logger: logger, Dial: dial, Prepare: svc.Sign})
			ctl := controller.New(node, controller.Options{
				Group:        cc.Group,
				Unclean:      cc.EnableElectUncleanMaster,
				ScanInterval: time.Duration(cc.ScanNotActiveBrokerInterval) * time.Millisecond,
				ElectRetries: cc.ElectMasterMaxRetryCount,
				Logger:       logger,
				Notify: func(addr string, req *remoting.Command) {
					go func() {
						if err := client.InvokeOneway(addr, req); err != nil {
							logger.Warn("NOTIFY_BROKER_ROLE_CHANGED not sent", "broker", addr, "err", err)
						}
					}()
				},
			})
			srv := transport.NewServer(lim)
			ctl.Register(srv, controller.ConfigBody(config.Dump(&cc)))
			if svc != nil {
				for code, h := range svc.Handlers() {
					srv.Register(code, h, nil)
				}
			}
			addr, err := serveController(srv, listen, tc, logger)
			if err != nil {
				node.Close()
				return err
			}
			adv := advertise(addr, self.Addr)
			advertised.Store(&adv)
			ctx, cancel := context.WithCancel(context.Background())
			go ctl.Run(ctx)
			logger.Info("controller serving", "id", cc.SelfID, "remoting", adv, "raft", self.Addr, "store", cc.StorePath)
			fmt.Println("ready")
			sig := <-stop
			logger.Info("shutting down", "signal", sig.String())
			cancel()
			sctx, scancel := context.WithTimeout(context.Background(), shutdownBudget)
			defer scancel()
			err = srv.Shutdown(sctx)
			client.Close()
			if cerr := node.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&f.configFile, "config", "c", "", "controller properties file (RocketMQ key names)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "key=value (repeatable)")
	cmd.Flags().StringVar(&f.listen, "listen", "", "remoting listen address (default 0.0.0.0:listenPort, 19876)")
	cmd.Flags().StringVar(&f.pprof, "pprof", "", "serve net/http/pprof on this address")
	return cmd
}

// advertise is the remoting address other controllers name for this one:
// the bound address, with the raft peer's host when bound to every
// interface.
func advertise(bound net.Addr, peerAddr string) string {
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return bound.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, _, err := net.SplitHostPort(peerAddr); err == nil {
			host = h
		}
	}
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p))
}
