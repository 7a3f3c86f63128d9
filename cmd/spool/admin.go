package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// adminEnv is what every admin command runs with: the name servers, a
// remoting client, where to print and how.
type adminEnv struct {
	cli    *transport.Client
	ns     []string
	out    io.Writer
	output string // "" (mqadmin's text) or "json"
}

// jsonOut reports whether the command prints JSON (-o json / --output json).
func (e *adminEnv) jsonOut() bool { return e.output == "json" }

// printJSON writes v as indented JSON.
func (e *adminEnv) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.out, "%s\n", b)
	return err
}

func (e *adminEnv) printf(format string, a ...any) { fmt.Fprintf(e.out, format, a...) }

// admin builds the admin commands; namesrv and output are bound to the
// root's and each command's flags.
type admin struct {
	namesrv string
	output  string
}

// command makes one admin command. shortOutput says whether -o is the
// output flag's shorthand (mqadmin uses -o for something else in a few
// commands; --output works everywhere).
func (a *admin) command(use, short string, shortOutput bool, run func(e *adminEnv, args []string) error) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ns := a.namesrv
			if ns == "" {
				ns = os.Getenv("NAMESRV_ADDR")
			}
			if ns == "" {
				return errors.New("give -n NAMESRV_ADDR")
			}
			switch a.output {
			case "", "text", "json":
			default:
				return fmt.Errorf("-o %s: the output is text (default) or json", a.output)
			}
			cli := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
			defer cli.Close()
			e := &adminEnv{cli: cli, ns: splitNamesrv(ns), out: c.OutOrStdout(), output: a.output}
			if e.output == "text" {
				e.output = ""
			}
			return run(e, args)
		}}
	if shortOutput {
		c.Flags().StringVarP(&a.output, "output", "o", "", "output format: text (mqadmin's) or json")
	} else {
		c.Flags().StringVar(&a.output, "output", "", "output format: text (mqadmin's) or json")
	}
	return c
}

func adminCmd() *cobra.Command {
	a := &admin{}
	cmd := &cobra.Command{Use: "admin", Short: "administration through the remoting protocol, with mqadmin's command names",
		SilenceUsage: true, SilenceErrors: true}
	cmd.PersistentFlags().StringVarP(&a.namesrv, "namesrv", "n", "", "name server address(es), ';'-separated (default $NAMESRV_ADDR)")
	cmd.AddCommand(a.legacyCommands()...)
	cmd.AddCommand(a.topicCommands()...)
	cmd.AddCommand(a.groupCommands()...)
	cmd.AddCommand(a.brokerCommands()...)
	cmd.AddCommand(a.namesrvCommands()...)
	cmd.AddCommand(a.messageCommands()...)
	cmd.AddCommand(a.offsetCommands()...)
	cmd.AddCommand(a.controllerCommands()...)
	addAuthCommands(cmd, &a.namesrv)
	return cmd
}

// legacyCommands are Spool's first admin commands, kept as they were.
func (a *admin) legacyCommands() []*cobra.Command {
	var queues, perm int
	create := a.command("create-topic TOPIC", "create or update a topic on every master broker (see updateTopic)", true, func(e *adminEnv, args []string) error {
		if len(args) != 1 {
			return errors.New("create-topic takes one TOPIC")
		}
		if err := createTopic(e.cli, e.ns, args[0], queues, perm); err != nil {
			return err
		}
		e.printf("topic %s: %d queues, perm %d\n", args[0], queues, perm)
		return nil
	})
	create.Flags().IntVar(&queues, "queues", 8, "read and write queues")
	create.Flags().IntVar(&perm, "perm", 6, "permission bits (2 write, 4 read)")

	del := a.command("delete-topic TOPIC", "delete a topic from every broker and name server (see deleteTopic)", true, func(e *adminEnv, args []string) error {
		if len(args) != 1 {
			return errors.New("delete-topic takes one TOPIC")
		}
		brokers, err := clusterBrokers(e.cli, e.ns)
		if err != nil {
			return err
		}
		for _, addr := range brokers {
			if _, err := call(e.cli, addr, remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": args[0]}, nil)); err != nil {
				return err
			}
		}
		for _, n := range e.ns {
			if _, err := call(e.cli, n, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": args[0]}, nil)); err != nil {
				return err
			}
		}
		e.printf("topic %s deleted\n", args[0])
		return nil
	})

	list := a.command("topics", "list the topics the name server knows (see topicList)", true, func(e *adminEnv, _ []string) error {
		topics, err := allTopics(e)
		if err != nil {
			return err
		}
		e.printf("%s\n", strings.Join(topics, "\n"))
		return nil
	})

	routeCmd := a.command("route TOPIC", "print a topic's route as the name server answers it (see topicRoute)", true, func(e *adminEnv, args []string) error {
		if len(args) != 1 {
			return errors.New("route takes one TOPIC")
		}
		resp, err := call(e.cli, e.ns[0], remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": args[0]}, nil))
		if err != nil {
			return err
		}
		e.printf("%s\n", resp.Body)
		return nil
	})

	runtime := a.command("runtime", "print every broker's runtime figures (GET_BROKER_RUNTIME_INFO; see brokerStatus)", true, func(e *adminEnv, _ []string) error {
		return eachBroker(e.cli, e.ns, remoting.GetBrokerRuntimeInfo, nil, func(name string, resp *remoting.Command) {
			printTable(e.out, name, resp.Body)
		})
	})

	brokerConfig := a.command("broker-config [key=value ...]", "print every broker's configuration, or change live keys (see getBrokerConfig)", true, func(e *adminEnv, args []string) error {
		if len(args) == 0 {
			return eachBroker(e.cli, e.ns, remoting.GetBrokerConfig, nil, func(name string, resp *remoting.Command) {
				e.printf("# %s\n%s\n", name, resp.Body)
			})
		}
		body := strings.Join(args, "\n") + "\n"
		return eachBroker(e.cli, e.ns, remoting.UpdateBrokerConfig, []byte(body), func(name string, _ *remoting.Command) {
			e.printf("%s: updated %s\n", name, strings.Join(args, " "))
		})
	})

	var evictTopic string
	evict := a.command("evict", "drop the CommitLog's (or a topic's) pages from memory and report residency", true, func(e *adminEnv, _ []string) error {
		var ext map[string]string
		if evictTopic != "" {
			ext = map[string]string{"topic": evictTopic}
		}
		brokers, err := clusterBrokers(e.cli, e.ns)
		if err != nil {
			return err
		}
		for name, addr := range brokers {
			resp, err := call(e.cli, addr, remoting.NewRequest(remoting.EvictPageCache, ext, nil))
			if err != nil {
				return err
			}
			e.printf("%s: %s\n", name, resp.Body)
		}
		return nil
	})
	evict.Flags().StringVar(&evictTopic, "topic", "", "only the records of this topic (default: the whole CommitLog)")
	return []*cobra.Command{create, del, list, routeCmd, runtime, brokerConfig, evict}
}

func eachBroker(cli *transport.Client, ns []string, code int32, body []byte, fn func(string, *remoting.Command)) error {
	brokers, err := clusterBrokers(cli, ns)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(brokers))
	for n := range brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		resp, err := call(cli, brokers[n], remoting.NewRequest(code, nil, body))
		if err != nil {
			return err
		}
		fn(n, resp)
	}
	return nil
}

func printTable(w io.Writer, name string, body []byte) {
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(body, &kv); err != nil {
		fmt.Fprintf(w, "# %s\n%s\n", name, body)
		return
	}
	fmt.Fprintf(w, "# %s\n", name)
	for _, k := range sortedKeys(kv.Table) {
		fmt.Fprintf(w, "%-40s %s\n", k, kv.Table[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
