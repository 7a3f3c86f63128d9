package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spoolmq/spool/internal/ctlbody"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// The controller commands take mqadmin's options as mqadmin spells them,
// "-bn" among them, which cobra's one-letter shorthands cannot express:
// they parse their own arguments (ctlFlags).

// ctlOpt is one option of a controller command: its short and long names
// and whether it takes a value.
type ctlOpt struct {
	short, long string
	value       bool
}

// ctlFlags is a parsed command line: long name -> value ("true" for a
// switch).
type ctlFlags map[string]string

// common options of every controller command.
var ctlCommon = []ctlOpt{{"n", "namesrv", true}, {"o", "output", true}}

func parseCtlFlags(args []string, opts []ctlOpt) (ctlFlags, error) {
	out := ctlFlags{}
	all := append(append([]ctlOpt{}, ctlCommon...), opts...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			return nil, errHelp
		}
		var name, val string
		hasVal := false
		switch {
		case strings.HasPrefix(a, "--"):
			name = a[2:]
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name = a[1:]
		default:
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
		if k, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = k, v, true
		}
		var o *ctlOpt
		for j := range all {
			if all[j].short == name || all[j].long == name {
				o = &all[j]
			}
		}
		if o == nil {
			return nil, fmt.Errorf("unknown option %q", a)
		}
		switch {
		case !o.value:
			val = "true"
		case !hasVal:
			if i+1 >= len(args) {
				return nil, fmt.Errorf("option %s needs a value", a)
			}
			i++
			val = args[i]
		}
		out[o.long] = strings.TrimSpace(val)
	}
	return out, nil
}

var errHelp = errors.New("help")

// ctlUsage renders the options for --help.
func ctlUsage(use string, opts []ctlOpt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: spool admin %s", use)
	for _, o := range opts {
		fmt.Fprintf(&b, " [-%s", o.short)
		if o.value {
			fmt.Fprintf(&b, " %s", o.long)
		}
		b.WriteString("]")
	}
	b.WriteString(" [-o text|json]\n")
	return b.String()
}

// ctlCommand builds a controller command: run gets the parsed options
// and an environment whose name servers are -n (or the admin's -n, or
// $NAMESRV_ADDR), possibly none.
func (a *admin) ctlCommand(use, short string, opts []ctlOpt, run func(e *adminEnv, f ctlFlags) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			f, err := parseCtlFlags(args, opts)
			if errors.Is(err, errHelp) {
				fmt.Fprint(c.OutOrStdout(), ctlUsage(use, opts))
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", use, err, ctlUsage(use, opts))
			}
			ns := f["namesrv"]
			if ns == "" {
				ns = a.namesrv
			}
			if ns == "" {
				ns = os.Getenv("NAMESRV_ADDR")
			}
			output := f["output"]
			switch output {
			case "", "json":
			case "text":
				output = ""
			default:
				return fmt.Errorf("-o %s: the output is text (default) or json", output)
			}
			cli := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
			defer cli.Close()
			e := &adminEnv{cli: cli, out: c.OutOrStdout(), output: output}
			if ns != "" {
				e.ns = splitNamesrv(ns)
			}
			return run(e, f)
		}}
}

func (a *admin) controllerCommands() []*cobra.Command {
	return []*cobra.Command{a.getControllerMetaData(), a.getSyncStateSet(), a.getBrokerEpoch(), a.electMaster(),
		a.cleanBrokerMetadata()}
}

// controllerMeta is a CONTROLLER_GET_METADATA_INFO answer
// (GetMetaDataResponseHeader).
type controllerMeta struct {
	Group                   string   `json:"group"`
	ControllerLeaderID      string   `json:"controllerLeaderId"`
	ControllerLeaderAddress string   `json:"controllerLeaderAddress"`
	IsLeader                bool     `json:"isLeader"`
	Peers                   []string `json:"peers"`
}

// controllerAddr is the first address of -a (mqadmin takes a ';' list and
// asks the first).
func controllerAddr(f ctlFlags) (string, error) {
	a := strings.TrimSpace(strings.Split(f["controllerAddress"], ";")[0])
	if a == "" {
		return "", errors.New("give -a CONTROLLER_ADDR")
	}
	return a, nil
}

func (e *adminEnv) controllerMeta(addr string) (controllerMeta, error) {
	resp, err := e.brokerCall(addr, remoting.ControllerGetMetadataInfo, "CONTROLLER_GET_METADATA_INFO", nil, nil)
	if err != nil {
		return controllerMeta{}, err
	}
	m := controllerMeta{Group: resp.Ext("group"), ControllerLeaderID: resp.Ext("controllerLeaderId"),
		ControllerLeaderAddress: resp.Ext("controllerLeaderAddress"), IsLeader: resp.Ext("isLeader") == "true", Peers: []string{}}
	for _, p := range strings.Split(resp.Ext("peers"), ";") {
		if p = strings.TrimSpace(p); p != "" {
			m.Peers = append(m.Peers, p)
		}
	}
	return m, nil
}

// controllerLeader asks -a for the leader, where mqadmin's requests that
// change or read current state go.
func (e *adminEnv) controllerLeader(f ctlFlags) (string, error) {
	addr, err := controllerAddr(f)
	if err != nil {
		return "", err
	}
	m, err := e.controllerMeta(addr)
	if err != nil {
		return "", err
	}
	if m.ControllerLeaderAddress == "" {
		return "", fmt.Errorf("the controller at %s knows no leader yet", addr)
	}
	return m.ControllerLeaderAddress, nil
}

func (a *admin) getControllerMetaData() *cobra.Command {
	opts := []ctlOpt{{"a", "controllerAddress", true}}
	return a.ctlCommand("getControllerMetaData", "the controller group's leader and peers (CONTROLLER_GET_METADATA_INFO)", opts,
		func(e *adminEnv, f ctlFlags) error {
			addr, err := controllerAddr(f)
			if err != nil {
				return err
			}
			m, err := e.controllerMeta(addr)
			if err != nil {
				return err
			}
			if e.jsonOut() {
				return e.printJSON(m)
			}
			e.printf("\n#ControllerGroup\t%s", m.Group)
			e.printf("\n#ControllerLeaderId\t%s", m.ControllerLeaderID)
			e.printf("\n#ControllerLeaderAddress\t%s", m.ControllerLeaderAddress)
			for _, p := range m.Peers {
				e.printf("\n#Peer:\t%s", p)
			}
			e.printf("\n")
			return nil
		})
}

// brokerNamesOf lists the broker names of a cluster from the name servers.
func (e *adminEnv) brokerNamesOf(cluster string) ([]string, error) {
	if len(e.ns) == 0 {
		return nil, errors.New("-c needs the name servers: give -n NAMESRV_ADDR")
	}
	ct, err := e.clusterInfo()
	if err != nil {
		return nil, err
	}
	names := append([]string(nil), ct.ClusterAddrTable[cluster]...)
	if len(names) == 0 {
		return nil, fmt.Errorf("cluster %s has no brokers", cluster)
	}
	sort.Strings(names)
	return names, nil
}

func replicaString(r ctlbody.ReplicaIdentity) string {
	return fmt.Sprintf("ReplicaIdentity{brokerName='%s', brokerId=%d, brokerAddress='%s', alive=%t}",
		r.BrokerName, r.BrokerID, r.BrokerAddress, r.Alive)
}

// repeat runs once, or every -i seconds (mqadmin's default 3) until the
// process is stopped.
func repeat(f ctlFlags, run func() error) error {
	iv, ok := f["interval"]
	if !ok {
		return run()
	}
	sec := 3
	if iv != "" {
		n, err := strconv.Atoi(iv)
		if err != nil || n <= 0 {
			return fmt.Errorf("-i %s: give the interval in whole seconds", iv)
		}
		sec = n
	}
	for {
		if err := run(); err != nil {
			return err
		}
		time.Sleep(time.Duration(sec) * time.Second)
	}
}

func (a *admin) getSyncStateSet() *cobra.Command {
	opts := []ctlOpt{{"a", "controllerAddress", true}, {"c", "clusterName", true}, {"b", "brokerName", true}, {"i", "interval", true}}
	return a.ctlCommand("getSyncStateSet", "the sync-state sets of broker sets (CONTROLLER_GET_SYNC_STATE_DATA)", opts,
		func(e *adminEnv, f ctlFlags) error {
			var names []string
			switch {
			case f["brokerName"] != "":
				names = []string{f["brokerName"]}
			case f["clusterName"] != "":
				var err error
				if names, err = e.brokerNamesOf(f["clusterName"]); err != nil {
					return err
				}
			default:
				return errors.New("give -b BROKER_NAME or -c CLUSTER_NAME")
			}
			return repeat(f, func() error {
				leader, err := e.controllerLeader(f)
				if err != nil {
					return err
				}
				body, _ := json.Marshal(names)
				resp, err := e.brokerCall(leader, remoting.ControllerGetSyncStateData, "CONTROLLER_GET_SYNC_STATE_DATA", nil, body)
				if err != nil {
					return err
				}
				var info ctlbody.BrokerReplicasInfo
				if err := json.Unmarshal(resp.Body, &info); err != nil {
					return fmt.Errorf("CONTROLLER_GET_SYNC_STATE_DATA answer: %w", err)
				}
				if e.jsonOut() {
					return e.printJSON(info)
				}
				keys := make([]string, 0, len(info.ReplicasInfoTable))
				for k := range info.ReplicasInfoTable {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					ri := info.ReplicasInfoTable[k]
					e.printf("\n#brokerName\t%s\n#MasterBrokerId\t%d\n#MasterAddr\t%s\n#MasterEpoch\t%d\n#SyncStateSetEpoch\t%d\n#SyncStateSetNums\t%d\n",
						k, ri.MasterBrokerID, ri.MasterAddress, ri.MasterEpoch, ri.SyncStateSetEpoch, len(ri.InSyncReplicas))
					for _, m := range ri.InSyncReplicas {
						e.printf("\nInSyncReplica:\t%s\n", replicaString(m))
					}
					for _, m := range ri.NotInSyncReplicas {
						e.printf("\nNotInSyncReplica:\t%s\n", replicaString(m))
					}
				}
				return nil
			})
		})
}

func (a *admin) getBrokerEpoch() *cobra.Command {
	opts := []ctlOpt{{"c", "clusterName", true}, {"b", "brokerName", true}, {"i", "interval", true}}
	return a.ctlCommand("getBrokerEpoch", "the epoch entries of every replica of a broker set (GET_BROKER_EPOCH_CACHE)", opts,
		func(e *adminEnv, f ctlFlags) error {
			if f["brokerName"] == "" && f["clusterName"] == "" {
				return errors.New("give -b BROKER_NAME or -c CLUSTER_NAME")
			}
			if len(e.ns) == 0 {
				return errors.New("give -n NAMESRV_ADDR")
			}
			return repeat(f, func() error {
				ct, err := e.clusterInfo()
				if err != nil {
					return err
				}
				var addrs []brokerRef
				for _, r := range ct.brokers(f["clusterName"]) {
					if f["brokerName"] == "" || r.BrokerName == f["brokerName"] {
						addrs = append(addrs, r)
					}
				}
				if len(addrs) == 0 {
					return fmt.Errorf("no broker of %s is registered", strings.TrimSpace(f["brokerName"]+" "+f["clusterName"]))
				}
				var all []map[string]any
				for _, r := range addrs {
					resp, err := e.brokerCall(r.Addr, remoting.GetBrokerEpochCache, "GET_BROKER_EPOCH_CACHE", nil, nil)
					if err != nil {
						return err
					}
					var c ctlbody.EpochEntryCache
					if err := json.Unmarshal(resp.Body, &c); err != nil {
						return fmt.Errorf("GET_BROKER_EPOCH_CACHE answer of %s: %w", r.Addr, err)
					}
					if n := len(c.EpochList); n > 0 {
						c.EpochList[n-1].EndOffset = c.MaxOffset
					}
					if e.jsonOut() {
						all = append(all, map[string]any{"brokerAddr": r.Addr, "epochCache": c})
						continue
					}
					e.printf("\n#clusterName\t%s\n#brokerName\t%s\n#brokerAddr\t%s\n#brokerId\t%d", c.ClusterName, c.BrokerName, r.Addr, c.BrokerID)
					for _, ep := range c.EpochList {
						e.printf("\n#Epoch: EpochEntry{epoch=%d, startOffset=%d, endOffset=%d}", ep.Epoch, ep.StartOffset, ep.EndOffset)
					}
					e.printf("\n")
				}
				if e.jsonOut() {
					return e.printJSON(all)
				}
				return nil
			})
		})
}

func (a *admin) electMaster() *cobra.Command {
	opts := []ctlOpt{{"a", "controllerAddress", true}, {"b", "brokerId", true}, {"bn", "brokerName", true}, {"c", "clusterName", true}}
	return a.ctlCommand("electMaster", "make a replica the master of its broker set (CONTROLLER_ELECT_MASTER)", opts,
		func(e *adminEnv, f ctlFlags) error {
			if f["brokerId"] == "" || f["brokerName"] == "" || f["clusterName"] == "" {
				return errors.New("give -b BROKER_ID -bn BROKER_NAME -c CLUSTER_NAME")
			}
			id, err := strconv.ParseInt(f["brokerId"], 10, 64)
			if err != nil {
				return fmt.Errorf("-b %s: the broker id is a number", f["brokerId"])
			}
			leader, err := e.controllerLeader(f)
			if err != nil {
				return err
			}
			resp, err := e.brokerCall(leader, remoting.ControllerElectMaster, "CONTROLLER_ELECT_MASTER", map[string]string{
				"clusterName": f["clusterName"], "brokerName": f["brokerName"], "brokerId": strconv.FormatInt(id, 10),
				"designateElect": "true", "invokeTime": strconv.FormatInt(time.Now().UnixMilli(), 10)}, nil)
			if err != nil {
				return err
			}
			var body ctlbody.ElectMasterResponseBody
			if len(resp.Body) > 0 {
				if err := json.Unmarshal(resp.Body, &body); err != nil {
					return fmt.Errorf("CONTROLLER_ELECT_MASTER answer: %w", err)
				}
			}
			ids := []string{}
			var addrs map[string]string
			if body.BrokerMemberGroup != nil {
				addrs = body.BrokerMemberGroup.BrokerAddrs
				for k := range addrs {
					ids = append(ids, k)
				}
			}
			sort.Slice(ids, func(i, j int) bool {
				a, _ := strconv.ParseInt(ids[i], 10, 64)
				b, _ := strconv.ParseInt(ids[j], 10, 64)
				return a < b
			})
			if e.jsonOut() {
				return e.printJSON(map[string]any{"clusterName": f["clusterName"], "brokerName": f["brokerName"],
					"masterBrokerId": resp.Ext("masterBrokerId"), "masterAddress": resp.Ext("masterAddress"),
					"masterEpoch": resp.Ext("masterEpoch"), "syncStateSetEpoch": resp.Ext("syncStateSetEpoch"),
					"syncStateSet": body.SyncStateSet, "brokerAddrs": addrs})
			}
			e.printf("\n#ClusterName\t%s", f["clusterName"])
			e.printf("\n#BrokerName\t%s", f["brokerName"])
			e.printf("\n#BrokerMasterAddr\t%s", resp.Ext("masterAddress"))
			e.printf("\n#MasterEpoch\t%s", resp.Ext("masterEpoch"))
			e.printf("\n#SyncStateSetEpoch\t%s\n", resp.Ext("syncStateSetEpoch"))
			for _, k := range ids {
				e.printf("\t#Broker\t%s\t%s\n", k, addrs[k])
			}
			return nil
		})
}

func (a *admin) cleanBrokerMetadata() *cobra.Command {
	opts := []ctlOpt{{"a", "controllerAddress", true}, {"b", "brokerControllerIdsToClean", true}, {"bn", "brokerName", true},
		{"c", "clusterName", true}, {"l", "cleanLivingBroker", false}}
	return a.ctlCommand("cleanBrokerMetadata", "remove replicas of a broker set from the controller (CLEAN_BROKER_DATA)", opts,
		func(e *adminEnv, f ctlFlags) error {
			name := f["brokerName"]
			if name == "" {
				return errors.New("give -bn BROKER_NAME")
			}
			if ids := f["brokerControllerIdsToClean"]; ids != "" {
				for _, s := range strings.Split(ids, ";") {
					if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
						return errors.New("please set the option <brokerControllerIdsToClean> according to the format")
					}
				}
			}
			living := f["cleanLivingBroker"] == "true"
			if !living && f["clusterName"] == "" {
				return errors.New("cleanLivingBroker option is false, clusterName option can not be empty.")
			}
			leader, err := e.controllerLeader(f)
			if err != nil {
				return err
			}
			ext := map[string]string{"brokerName": name, "isCleanLivingBroker": strconv.FormatBool(living),
				"invokeTime": strconv.FormatInt(time.Now().UnixMilli(), 10)}
			if c := f["clusterName"]; c != "" {
				ext["clusterName"] = c
			}
			if ids := f["brokerControllerIdsToClean"]; ids != "" {
				ext["brokerControllerIdsToClean"] = ids
			}
			if _, err := e.brokerCall(leader, remoting.CleanBrokerData, "CLEAN_BROKER_DATA", ext, nil); err != nil {
				return err
			}
			if e.jsonOut() {
				return e.printJSON(map[string]any{"brokerName": name, "cleaned": true})
			}
			e.printf("clear broker %s metadata from controller success! \n", name)
			return nil
		})
}
