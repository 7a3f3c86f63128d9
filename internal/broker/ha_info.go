package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/failover"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// EXCHANGE_BROKER_HA_INFO (906) and the controller-mode slave's lookup of
// its master's HA address.
//
// A request without masterHaAddress asks a broker for its HA facts: a
// master (brokerId 0; in controller mode, the broker the controller made
// master) answers masterHaAddress (its HA listener as advertised,
// brokerIP2:haListenPort), masterFlushOffset (the CommitLog's end when it
// started, RocketMQ's brokerInitMaxOffset) and masterAddress (its
// remoting address); any other broker answers SUCCESS with none of them.
// A request with masterHaAddress tells a slave where its master
// replicates from: in controller mode the HA client dials it from its
// next connection attempt while its master is the broker named by
// masterAddress (or, without masterAddress, the master it follows when the
// request arrives); in classic mode the HA client follows it at once, as a
// registration answer's haServerAddr does (the next registration answer
// may name another). masterFlushOffset in such a request is ignored
// (Spool has no syncMasterFlushOffsetWhenStartup).
//
// A controller-mode slave resolves its master's HA address before every
// connection attempt of its HA client (resolveMasterHA): an address a
// request named for that master, else the master's own answer to 906,
// else the master's remoting port + 1 (RocketMQ's default haListenPort),
// logged. The master is asked on every attempt because a just-elected
// master may not know yet that it is master when its slaves first ask.

// haInfo is the broker's state for EXCHANGE_BROKER_HA_INFO.
type haInfo struct {
	initMaxOffset atomic.Int64 // the CommitLog's end when the broker started

	mu sync.Mutex
	// named maps a master's remoting address to the HA address a request
	// named for it (controller mode).
	named map[string]string
	// last is the previous resolution (master -> HA address and how),
	// logged only when it changes.
	last map[string]string
}

func (h *haInfo) setNamed(master, haAddr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.named == nil {
		h.named = map[string]string{}
	}
	h.named[master] = haAddr
}

func (h *haInfo) namedFor(master string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.named[master]
}

// changed records how master resolved and reports whether it differs
// from the previous resolution.
func (h *haInfo) changed(master, how string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]string{}
	}
	if h.last[master] == how {
		return false
	}
	h.last[master] = how
	return true
}

// isHAMaster reports whether the broker answers EXCHANGE_BROKER_HA_INFO
// as a master.
func (b *Broker) isHAMaster() bool {
	if b.failover != nil {
		return b.failover.Status().Role == failover.RoleMaster
	}
	return b.config().BrokerID == 0
}

// advertisedHAAddr is the master's HA listener as slaves dial it ("" when
// it has none).
func (b *Broker) advertisedHAAddr() string {
	if b.sw != nil {
		return b.sw.advertisedHA()
	}
	if r := b.repl; r != nil {
		return r.haAddr.get()
	}
	return ""
}

func (b *Broker) handleExchangeBrokerHAInfo(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	if named := strings.TrimSpace(req.Ext("masterHaAddress")); named != "" {
		b.followNamedHA(named, strings.TrimSpace(req.Ext("masterAddress")))
		return resp
	}
	if !b.isHAMaster() {
		return resp
	}
	if a := b.advertisedHAAddr(); a != "" {
		resp.SetExt("masterHaAddress", a)
	}
	resp.SetExt("masterFlushOffset", strconv.FormatInt(b.hainfo.initMaxOffset.Load(), 10))
	resp.SetExt("masterAddress", b.addr)
	return resp
}

// followNamedHA takes haAddr as the HA address of master (a remoting
// address, "" for the current one).
func (b *Broker) followNamedHA(haAddr, master string) {
	if b.failover != nil {
		if master == "" {
			master = b.failover.Status().MasterAddr
		}
		if master == "" {
			b.logger.Warn("EXCHANGE_BROKER_HA_INFO named an HA address without masterAddress and the broker follows no master yet; ignored",
				"masterHaAddress", haAddr)
			return
		}
		b.hainfo.setNamed(master, haAddr)
		b.logger.Info("EXCHANGE_BROKER_HA_INFO: master's HA address named; the HA client dials it from its next connection attempt",
			"master", master, "masterHaAddress", haAddr)
		return
	}
	r := b.repl
	if r == nil || r.slave == nil {
		return // a classic master has no HA client
	}
	if master != "" {
		r.masterClient.set(master)
	}
	if r.haMaster.set(haAddr) {
		r.slave.SetMasterAddr(haAddr)
		b.logger.Info("EXCHANGE_BROKER_HA_INFO: following the master's HA address", "masterHaAddress", haAddr)
	}
}

// haInfoTimeout bounds one EXCHANGE_BROKER_HA_INFO to a master
// (RocketMQ's retrieveBrokerHaInfo waits 3 s).
const haInfoTimeout = 3 * time.Second

// resolveMasterHA is the controller-mode HA client's resolver
// (ha.SwitchConfig.ResolveMaster): the HA address of the master whose
// remoting address is master.
func (b *Broker) resolveMasterHA(ctx context.Context, master string) string {
	addr, how := b.hainfo.namedFor(master), "named by EXCHANGE_BROKER_HA_INFO"
	var why error
	if addr == "" {
		addr, why = b.askMasterHA(ctx, master)
		how = "answered by the master"
	}
	if addr == "" {
		addr = failover.DefaultHAAddr(master)
		how = "the master's port + 1 (default haListenPort)"
	}
	if b.hainfo.changed(master, addr+" "+how) {
		if why != nil {
			b.logger.Warn("controller mode: the master's HA address is taken as its port + 1", "master", master,
				"masterHaAddress", addr, "reason", why)
		} else {
			b.logger.Info("controller mode: the master's HA address", "master", master, "masterHaAddress", addr, "from", how)
		}
	}
	return addr
}

// askMasterHA sends EXCHANGE_BROKER_HA_INFO to master and returns the HA
// address it answers; "" with the reason when it answers none.
func (b *Broker) askMasterHA(ctx context.Context, master string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, haInfoTimeout)
	defer cancel()
	resp, err := b.registrar.client.Invoke(ctx, master, remoting.NewRequest(remoting.ExchangeBrokerHAInfo, nil, nil))
	switch {
	case err != nil:
		return "", fmt.Errorf("EXCHANGE_BROKER_HA_INFO: %w", err)
	case resp.Code != remoting.Success:
		return "", fmt.Errorf("EXCHANGE_BROKER_HA_INFO answered %d %s", resp.Code, resp.Remark)
	}
	if a := strings.TrimSpace(resp.Ext("masterHaAddress")); a != "" {
		return a, nil
	}
	return "", fmt.Errorf("EXCHANGE_BROKER_HA_INFO answered no masterHaAddress (the broker is not master yet)")
}
