package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/authserve"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/controller"
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
			listen := f.listen
			if listen == "" {
				listen = fmt.Sprintf("0.0.0.0:%d", cc.ListenPort)
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
			run, err := openController(cc, tc, svc, logger)
			if err != nil {
				return err
			}
			srv := transport.NewServer(lim)
			run.ctl.Register(srv, run.configBody())
			if svc != nil {
				for code, h := range svc.Handlers() {
					srv.Register(code, h, nil)
				}
			}
			addr, err := serveController(srv, listen, tc, logger)
			if err != nil {
				run.close()
				return err
			}
			adv := run.serving(addr)
			logger.Info("controller serving", "id", cc.SelfID, "remoting", adv, "raft", run.self.Addr, "store", cc.StorePath)
			fmt.Println("ready")
			sig := <-stop
			logger.Info("shutting down", "signal", sig.String())
			sctx, scancel := context.WithTimeout(context.Background(), shutdownBudget)
			defer scancel()
			err = srv.Shutdown(sctx)
			if cerr := run.close(); err == nil {
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
