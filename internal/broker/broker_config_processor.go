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
	storeCfg := b.storeCfg
	kv := config.Dump(&cfg, &storeCfg)
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
	resp := response(req, remoting.Success, "")
	resp.Body = buf.Bytes()
	if v, err := json.Marshal(b.topics.Version()); err == nil {
		resp.SetExt("version", string(v))
	}
	return resp
}

// handleUpdateBrokerConfig applies a .properties body to the broker keys
// tagged live; anything else is refused by name and nothing is applied.
func (b *Broker) handleUpdateBrokerConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	props, err := config.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		return response(req, remoting.InvalidParameter, fmt.Sprintf("%v: broker config properties: %v", ErrBadBody, err))
	}
	if len(props) == 0 {
		return response(req, remoting.InvalidParameter, "no properties to update")
	}
	storeCfg := b.storeCfg
	storeKeys := config.Dump(&storeCfg)
	var refused []string
	for k := range props {
		if _, ok := storeKeys[k]; ok {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return response(req, remoting.InvalidParameter, fmt.Sprintf(
			"store keys cannot be changed at run time (restart with the new value): %s", strings.Join(refused, ", ")))
	}
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	next := b.Config()
	if err := config.UpdateLive(props, &next); err != nil {
		return response(req, remoting.InvalidParameter, err.Error())
	}
	b.cfg.Store(&next)
	b.applyTimerLive(&next)
	b.logger.Info("broker config updated", "keys", len(props))
	// brokerPermission masks the registered topic permissions.
	b.registrar.trigger()
	return response(req, remoting.Success, "")
}
