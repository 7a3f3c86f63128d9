package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// handleGetBrokerConfig answers every broker and store key as a
// .properties body, with the topic table's data version in ext "version".
func (b *Broker) handleGetBrokerConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	cfg := b.Config()
	kv := config.Dump(&cfg, b.storeConfig())
	redactSecrets(kv)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		buf.WriteString(k)
		buf.WriteByte('=')
		buf.WriteString(kv[k])
		buf.WriteByte('\n')
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = buf.Bytes()
	if v, err := json.Marshal(b.topics.Version()); err == nil {
		resp.SetExt("version", string(v))
	}
	return resp
}

// handleUpdateBrokerConfig applies a .properties body to the broker and
// store keys tagged live, then persists them, as RocketMQ's
// Configuration.update does, to the broker's configuration file (the -c
// file, else DefaultConfigFile) so a restart keeps them. Any other key is
// refused by name; on any error nothing is applied and nothing written.
func (b *Broker) handleUpdateBrokerConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	props, err := config.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		return remoting.NewResponse(req, remoting.InvalidParameter, fmt.Sprintf("%v: broker config properties: %v", ErrBadBody, err))
	}
	if len(props) == 0 {
		return remoting.NewResponse(req, remoting.InvalidParameter, "no properties to update")
	}
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	next := b.Config()
	nextStore := *b.storeConfig()
	oldInStore := b.store.Config()
	inStore := oldInStore
	// The store's own copy is a target too, so UpdateConfig sees exactly
	// the keys changed here.
	if err := config.UpdateLive(props, &next, &nextStore, &inStore); err != nil {
		return remoting.NewResponse(req, remoting.InvalidParameter, err.Error())
	}
	storeKeys := config.Dump(&nextStore)
	var storeChanged []string
	for k := range props {
		if _, ok := storeKeys[k]; ok {
			storeChanged = append(storeChanged, k)
		}
	}
	if len(storeChanged) > 0 {
		if err := b.store.UpdateConfig(inStore); err != nil {
			return remoting.NewResponse(req, remoting.InvalidParameter, err.Error())
		}
	}
	all := config.Dump(&next, &nextStore)
	set := make(map[string]string, len(props))
	for k := range props {
		set[k] = all[k]
	}
	if err := config.UpdateFile(b.cfgFile, set); err != nil {
		if len(storeChanged) > 0 {
			if rerr := b.store.UpdateConfig(oldInStore); rerr != nil {
				b.logger.Error("broker config: restoring the store's keys", "err", rerr)
			}
		}
		b.logger.Error("broker config not persisted; nothing changed", "file", b.cfgFile, "err", err)
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("configuration not changed: persisting it failed: %v", err))
	}
	b.setConfig(&next, &nextStore)
	b.applyTimerLive(&next)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.logger.Info("broker config updated and persisted", "keys", strings.Join(keys, ","), "file", b.cfgFile)
	// brokerPermission masks the registered topic permissions.
	b.registrar.trigger()
	return remoting.NewResponse(req, remoting.Success, "")
}
