package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func adminCmd() *cobra.Command {
	var namesrv string
	cmd := &cobra.Command{Use: "admin", Short: "administration through the remoting protocol"}
	cmd.PersistentFlags().StringVarP(&namesrv, "namesrv", "n", "", "name server address(es), ';'-separated (default $NAMESRV_ADDR)")
	withClient := func(fn func(cli *transport.Client, ns []string, args []string) error) func(*cobra.Command, []string) error {
		return func(_ *cobra.Command, args []string) error {
			if namesrv == "" {
				namesrv = os.Getenv("NAMESRV_ADDR")
			}
			if namesrv == "" {
				return errors.New("give -n NAMESRV_ADDR")
			}
			cli := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
			defer cli.Close()
			return fn(cli, splitNamesrv(namesrv), args)
		}
	}

	var queues, perm int
	create := &cobra.Command{
		Use: "create-topic TOPIC", Short: "create or update a topic on every master broker", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cli *transport.Client, ns []string, args []string) error {
			if err := createTopic(cli, ns, args[0], queues, perm); err != nil {
				return err
			}
			fmt.Printf("topic %s: %d queues, perm %d\n", args[0], queues, perm)
			return nil
		}),
	}
	create.Flags().IntVar(&queues, "queues", 8, "read and write queues")
	create.Flags().IntVar(&perm, "perm", 6, "permission bits (2 write, 4 read)")

	del := &cobra.Command{
		Use: "delete-topic TOPIC", Short: "delete a topic from every broker and name server", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cli *transport.Client, ns []string, args []string) error {
			brokers, err := clusterBrokers(cli, ns)
			if err != nil {
				return err
			}
			for _, addr := range brokers {
				if _, err := call(cli, addr, remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": args[0]}, nil)); err != nil {
					return err
				}
			}
			for _, a := range ns {
				if _, err := call(cli, a, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": args[0]}, nil)); err != nil {
					return err
				}
			}
			fmt.Printf("topic %s deleted\n", args[0])
			return nil
		}),
	}

	list := &cobra.Command{
		Use: "topics", Short: "list the topics the name server knows",
		RunE: withClient(func(cli *transport.Client, ns []string, _ []string) error {
			resp, err := call(cli, ns[0], remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil))
			if err != nil {
				return err
			}
			var tl struct {
				TopicList []string `json:"topicList"`
			}
			if err := json.Unmarshal(resp.Body, &tl); err != nil {
				return err
			}
			sort.Strings(tl.TopicList)
			fmt.Println(strings.Join(tl.TopicList, "\n"))
			return nil
		}),
	}

	routeCmd := &cobra.Command{
		Use: "route TOPIC", Short: "print a topic's route as the name server answers it", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cli *transport.Client, ns []string, args []string) error {
			resp, err := call(cli, ns[0], remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": args[0]}, nil))
			if err != nil {
				return err
			}
			fmt.Println(string(resp.Body))
			return nil
		}),
	}

	runtime := &cobra.Command{
		Use: "runtime", Short: "print every broker's runtime figures (GET_BROKER_RUNTIME_INFO)",
		RunE: withClient(func(cli *transport.Client, ns []string, _ []string) error {
			return eachBroker(cli, ns, remoting.GetBrokerRuntimeInfo, nil, func(name string, resp *remoting.Command) {
				printTable(name, resp.Body)
			})
		}),
	}

	brokerConfig := &cobra.Command{
		Use: "broker-config [key=value ...]", Short: "print every broker's configuration, or change live keys",
		RunE: withClient(func(cli *transport.Client, ns []string, args []string) error {
			if len(args) == 0 {
				return eachBroker(cli, ns, remoting.GetBrokerConfig, nil, func(name string, resp *remoting.Command) {
					fmt.Printf("# %s\n%s\n", name, resp.Body)
				})
			}
			body := strings.Join(args, "\n") + "\n"
			return eachBroker(cli, ns, remoting.UpdateBrokerConfig, []byte(body), func(name string, _ *remoting.Command) {
				fmt.Printf("%s: updated %s\n", name, strings.Join(args, " "))
			})
		}),
	}

	var evictTopic string
	evict := &cobra.Command{
		Use: "evict", Short: "drop the CommitLog's (or a topic's) pages from memory and report residency",
		RunE: withClient(func(cli *transport.Client, ns []string, _ []string) error {
			var ext map[string]string
			if evictTopic != "" {
				ext = map[string]string{"topic": evictTopic}
			}
			brokers, err := clusterBrokers(cli, ns)
			if err != nil {
				return err
			}
			for name, addr := range brokers {
				resp, err := call(cli, addr, remoting.NewRequest(remoting.EvictPageCache, ext, nil))
				if err != nil {
					return err
				}
				fmt.Printf("%s: %s\n", name, resp.Body)
			}
			return nil
		}),
	}
	evict.Flags().StringVar(&evictTopic, "topic", "", "only the records of this topic (default: the whole CommitLog)")

	cmd.AddCommand(create, del, list, routeCmd, runtime, brokerConfig, evict)
	addAuthCommands(cmd, &namesrv)
	return cmd
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

func printTable(name string, body []byte) {
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(body, &kv); err != nil {
		fmt.Printf("# %s\n%s\n", name, body)
		return
	}
	keys := make([]string, 0, len(kv.Table))
	for k := range kv.Table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("# %s\n", name)
	for _, k := range keys {
		fmt.Printf("%-40s %s\n", k, kv.Table[k])
	}
}
