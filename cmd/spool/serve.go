package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/internal/mempolicy"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
)

// shutdownBudget is how long a SIGINT/SIGTERM shutdown may take.
const shutdownBudget = 10 * time.Second

type serveFlags struct {
	configFile    string
	sets          []string
	store         string
	listen        string
	namesrvListen string
	namesrvAddr   string
	pprof         string
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// loadProps reads the -c file (if any) and applies --set key=value on top.
func loadProps(f *serveFlags) (map[string]string, error) {
	props := map[string]string{}
	if f.configFile != "" {
		p, err := config.LoadFile(f.configFile)
		if err != nil {
			return nil, err
		}
		props = p
	}
	for _, kv := range f.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--set %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, nil
}

// brokerConfigs binds properties onto the broker and store configurations
// and applies the command-line overrides. It also returns the file that
// UPDATE_BROKER_CONFIG persists changes to: the -c file, as in RocketMQ,
// or without one storePathRootDir/config/broker.properties, whose keys it
// applies under the command line's and the environment's.
func brokerConfigs(f *serveFlags, props map[string]string, logger *slog.Logger) (broker.Config, store.Config, string, error) {
	bc := broker.DefaultConfig()
	sc := store.DefaultConfig()
	if f.store != "" {
		props["storePathRootDir"] = f.store
	}
	if f.listen != "" {
		host, port, err := splitHostPort(f.listen)
		if err != nil {
			return bc, sc, "", fmt.Errorf("--listen: %w", err)
		}
		props["bindAddress"] = host
		props["listenPort"] = strconv.Itoa(port)
	}
	if f.namesrvAddr != "" {
		props["namesrvAddr"] = f.namesrvAddr
	}
	config.ApplyEnv(props, os.Getenv)
	report, err := config.Bind(props, &bc, &sc)
	if err != nil {
		return bc, sc, "", err
	}
	cfgFile := f.configFile
	if cfgFile == "" {
		cfgFile = broker.DefaultConfigFile(sc.StorePathRootDir)
		saved, err := config.LoadFile(cfgFile)
		switch {
		case err == nil:
			for k, v := range props {
				saved[k] = v
			}
			props = saved
			bc, sc = broker.DefaultConfig(), store.DefaultConfig()
			if report, err = config.Bind(props, &bc, &sc); err != nil {
				return bc, sc, "", fmt.Errorf("%s (keys saved by UPDATE_BROKER_CONFIG): %w", cfgFile, err)
			}
			logger.Info("applied the keys saved by UPDATE_BROKER_CONFIG", "file", cfgFile)
		case !errors.Is(err, fs.ErrNotExist):
			return bc, sc, "", err
		}
	}
	if len(report.Unbuilt) > 0 {
		logger.Warn("RocketMQ keys that Spool does not implement yet are ignored", "keys", strings.Join(report.Unbuilt, ","))
	}
	if _, set := props["storePathCommitLog"]; !set {
		sc.StorePathCommitLog = filepath.Join(sc.StorePathRootDir, "commitlog")
	}
	return bc, sc, cfgFile, nil
}

func splitHostPort(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", s)
	}
	return host, port, nil
}

// notifyStop starts catching SIGINT and SIGTERM. Call it before announcing
// readiness, so that a signal sent right after `ready` shuts down cleanly
// instead of killing the process.
func notifyStop() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch
}

// raiseNofile raises the soft descriptor limit to the hard one and logs
// both: every connection and every open store file takes a descriptor.
func raiseNofile(logger *slog.Logger) {
	soft, hard, err := store.RaiseNofileLimit()
	if err != nil {
		logger.Warn("could not raise the open-file limit", "soft", soft, "hard", hard, "err", err)
		return
	}
	logger.Info("open-file limit (RLIMIT_NOFILE)", "soft", soft, "hard", hard)
}

// applyMemoryPolicy sets the GOMEMLIMIT default (half of the cgroup's or
// the machine's memory when the environment sets none) and starts
// returning the heap's free memory to the OS after bursts, for the
// process's lifetime.
func applyMemoryPolicy(logger *slog.Logger) {
	limit, set := mempolicy.ApplyLimit()
	if set {
		logger.Info("memory limit (GOMEMLIMIT default)", "bytes", limit, "fraction", mempolicy.LimitFraction)
	} else if limit != math.MaxInt64 {
		logger.Info("memory limit (GOMEMLIMIT)", "bytes", limit)
	}
	go mempolicy.Run(nil, mempolicy.DefaultRelease)
}

// begin is what every serving command does first: a logger, the
// descriptor limit, signal handling, the properties, and the profiling
// endpoint when asked for.
func begin(f *serveFlags) (*slog.Logger, <-chan os.Signal, map[string]string, error) {
	logger := newLogger()
	raiseNofile(logger)
	applyMemoryPolicy(logger)
	stop := notifyStop()
	props, err := loadProps(f)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := servePprof(f.pprof, logger); err != nil {
		return nil, nil, nil, err
	}
	return logger, stop, props, nil
}

func standaloneCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "standalone",
		Short: "run a name server and a broker in one process on one store",
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, stop, props, err := begin(f)
			if err != nil {
				return err
			}
			if f.store == "" {
				if _, set := props["storePathRootDir"]; !set {
					f.store = "store"
				}
			}
			if f.store != "" {
				abs, err := filepath.Abs(f.store)
				if err != nil {
					return err
				}
				f.store = abs
			}
			tc, err := takeTLS(props)
			if err != nil {
				return err
			}
			bc, sc, cfgFile, err := brokerConfigs(f, props, logger)
			if err != nil {
				return err
			}
			nc := namesrv.DefaultConfig()
			nc.KVConfigPath = filepath.Join(sc.StorePathRootDir, "namesrv", "kvConfig.json")
			// The name-server port checks requests with the broker's
			// access control: the same users, policies and plain_acl.yml.
			access := bc.AuthenticationEnabled || bc.AuthorizationEnabled || bc.AclEnable
			if access {
				if err := plaintextRefusal(f.namesrvListen, tc, bc.AuthAllowPlaintext); err != nil {
					return err
				}
			}
			late := &lateAccess{}
			lim := limitKeys{bc.ServerMaxConnections, bc.ServerMaxConnectionsPerIp, bc.ServerAuthenticationTimeoutMillis}.
				serverConfig(bc.AuthenticationEnabled || bc.AclEnable)
			ns, err := namesrv.New(nc, logger.With("process", "namesrv"), late.options(access, lim)...)
			if err != nil {
				return err
			}
			// The embedded name server is reached in process; no network
			// registration to itself.
			bc.NamesrvAddr = ""
			b, err := broker.New(bc, broker.Options{StoreConfig: sc, ConfigFile: cfgFile, LocalNamesrv: ns, Logger: logger.With("process", "broker"), TLS: tc})
			if err != nil {
				ns.Shutdown()
				return err
			}
			late.bind(b.AccessControl())
			// The broker registers with the embedded name server before
			// the name-server port opens, so the first route lookup
			// already sees it.
			if err := b.Start(); err != nil {
				ns.Shutdown()
				return err
			}
			if _, err := serveNamesrv(ns, f.namesrvListen, tc, logger); err != nil {
				shutdownBroker(b, logger)
				ns.Shutdown()
				return err
			}
			logger.Info("spool standalone serving", "namesrv", f.namesrvListen, "broker", b.Addr(), "store", sc.StorePathRootDir)
			fmt.Println("ready")
			sig := <-stop
			logger.Info("shutting down", "signal", sig.String())
			err = shutdownBroker(b, logger)
			ns.Shutdown()
			return err
		},
	}
	cmd.Flags().StringVar(&f.store, "store", "", "store directory (storePathRootDir); default ./store")
	cmd.Flags().StringVar(&f.namesrvListen, "namesrv-listen", "127.0.0.1:9876", "name server listen address")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:10911", "broker listen address (the VIP channel is port-2)")
	cmd.Flags().StringVarP(&f.configFile, "config", "c", "", "broker.conf properties file (RocketMQ key names)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "key=value for any broker or store key, by its RocketMQ name (repeatable)")
	cmd.Flags().StringVar(&f.pprof, "pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060) for profiling")
	return cmd
}

func shutdownBroker(b *broker.Broker, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		logger.Error("broker shutdown", "err", err)
		return err
	}
	return nil
}

func namesrvCmd() *cobra.Command {
	var listen, configFile string
	var sets []string
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "run a name server",
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := newLogger()
			raiseNofile(logger)
			applyMemoryPolicy(logger)
			stop := notifyStop()
			props, err := loadProps(&serveFlags{configFile: configFile, sets: sets})
			if err != nil {
				return err
			}
			tc, err := takeTLS(props)
			if err != nil {
				return err
			}
			run, err := startNamesrv(props, listen, tc, logger)
			if err != nil {
				return err
			}
			fmt.Println("ready")
			<-stop
			return run.shutdown()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "listen address (default 0.0.0.0:listenPort, 9876)")
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "namesrv properties file")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "key=value (repeatable)")
	return cmd
}

func brokerCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "run a broker that registers with name servers",
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, stop, props, err := begin(f)
			if err != nil {
				return err
			}
			if f.namesrvAddr == "" {
				f.namesrvAddr = os.Getenv("NAMESRV_ADDR")
			}
			tc, err := takeTLS(props)
			if err != nil {
				return err
			}
			bc, sc, cfgFile, err := brokerConfigs(f, props, logger)
			if err != nil {
				return err
			}
			if bc.NamesrvAddr == "" {
				return fmt.Errorf("no name server: give -n, NAMESRV_ADDR or namesrvAddr in the config")
			}
			b, err := broker.New(bc, broker.Options{StoreConfig: sc, ConfigFile: cfgFile, Logger: logger, TLS: tc,
				StoreFailpoint: crashAt(os.Getenv(envCrashAt))})
			if err != nil {
				return err
			}
			if err := b.Start(); err != nil {
				return err
			}
			logger.Info("broker serving", "addr", b.Addr(), "namesrv", bc.NamesrvAddr)
			fmt.Println("ready")
			<-stop
			return shutdownBroker(b, logger)
		},
	}
	cmd.Flags().StringVarP(&f.configFile, "config", "c", "", "broker.conf properties file (RocketMQ key names)")
	cmd.Flags().StringVarP(&f.namesrvAddr, "namesrv", "n", "", "name server addresses, ';'-separated (default $NAMESRV_ADDR)")
	cmd.Flags().StringVar(&f.store, "store", "", "store directory (storePathRootDir)")
	cmd.Flags().StringVar(&f.listen, "listen", "", "listen address HOST:PORT (default 0.0.0.0:listenPort)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "key=value for any broker or store key (repeatable)")
	cmd.Flags().StringVar(&f.pprof, "pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060) for profiling")
	return cmd
}
