package main

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/remoting"
)

func (a *admin) namesrvCommands() []*cobra.Command {
	return []*cobra.Command{
		a.writePerm("wipeWritePerm", "stop routes offering a broker for writes (WIPE_WRITE_PERM_OF_BROKER), to drain it",
			remoting.WipeWritePermOfBroker, "wipeTopicCount", "wipe write perm of broker[%s] in name server[%s] OK, %d\n"),
		a.writePerm("addWritePerm", "give a drained broker its write permission back (ADD_WRITE_PERM_OF_BROKER)",
			remoting.AddWritePermOfBroker, "addTopicCount", "add write perm of broker[%s] in name server[%s] OK, %d\n"),
		a.getNamesrvConfig(), a.updateNamesrvConfig(),
	}
}

// writePerm builds wipeWritePerm and addWritePerm: the request goes to
// every name server, each answering how many topics it changed.
func (a *admin) writePerm(use, short string, code int32, countKey, format string) *cobra.Command {
	var brokerName string
	c := a.command(use, short, true, func(e *adminEnv, _ []string) error {
		if brokerName == "" {
			return errors.New("give -b BROKER_NAME")
		}
		type row struct {
			NameServer string `json:"nameServer"`
			Topics     int    `json:"topicCount"`
		}
		var rows []row
		for _, n := range e.ns {
			resp, err := call(e.cli, n, remoting.NewRequest(code, map[string]string{"brokerName": brokerName}, nil))
			if err != nil {
				return err
			}
			cnt, _ := strconv.Atoi(resp.Ext(countKey))
			rows = append(rows, row{n, cnt})
			if !e.jsonOut() {
				e.printf(format, brokerName, n, cnt)
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"brokerName": brokerName, "nameServers": rows})
		}
		return nil
	})
	c.Flags().StringVarP(&brokerName, "brokerName", "b", "", "broker name")
	return c
}

func (a *admin) getNamesrvConfig() *cobra.Command {
	return a.command("getNamesrvConfig", "print the name servers' configuration (GET_NAMESRV_CONFIG)", true, func(e *adminEnv, _ []string) error {
		all := map[string]map[string]string{}
		for _, n := range e.ns {
			resp, err := call(e.cli, n, remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
			if err != nil {
				return err
			}
			kv, err := config.ParseProperties(bytes.NewReader(resp.Body))
			if err != nil {
				return err
			}
			all[n] = kv
		}
		return e.printConfigs(e.ns, all)
	})
}

func (a *admin) updateNamesrvConfig() *cobra.Command {
	var key, value string
	c := a.command("updateNamesrvConfig", "change a name-server key on every name server (UPDATE_NAMESRV_CONFIG)", true, func(e *adminEnv, _ []string) error {
		if key == "" {
			return errors.New("give -k KEY and -v VALUE")
		}
		body := []byte(key + "=" + value + "\n")
		for _, n := range e.ns {
			if _, err := call(e.cli, n, remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, body)); err != nil {
				return err
			}
		}
		if e.jsonOut() {
			return e.printJSON(map[string]any{"nameServers": e.ns, "key": key, "value": value})
		}
		e.printf("update name server config success!%s\n%s : %s\n", e.ns, key, value)
		return nil
	})
	c.Flags().StringVarP(&key, "key", "k", "", "config key")
	c.Flags().StringVarP(&value, "value", "v", "", "config value")
	return c
}
