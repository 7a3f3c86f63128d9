package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/ha"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// HAConfig holds RocketMQ's classic master/slave keys (MessageStoreConfig
// in RocketMQ) with RocketMQ 5.3.3's defaults; brokerRole itself is the
// store's key.
type HAConfig struct {
	// ListenPort is haListenPort; <= 0 (the default) means listenPort+1,
	// RocketMQ's start-up rule (10912 with the default listenPort).
	ListenPort int `prop:"haListenPort"`
	// MasterAddress (haMasterAddress) is a slave's master HA address;
	// empty = the haServerAddr the name server answers the slave's
	// registration with.
	MasterAddress           string `prop:"haMasterAddress"`
	SendHeartbeatInterval   int64  `prop:"haSendHeartbeatInterval"` // ms
	HousekeepingInterval    int64  `prop:"haHousekeepingInterval"`  // ms
	TransferBatchSize       int    `prop:"haTransferBatchSize"`
	MaxGapNotInSync         int64  `prop:"haMaxGapNotInSync"`
	SlaveReadEnable         bool   `prop:"slaveReadEnable"`
	InSyncReplicas          int    `prop:"inSyncReplicas"`
	SlaveTimeout            int64  `prop:"slaveTimeout"` // ms
	FlowControlEnable       bool   `prop:"haFlowControlEnable"`
	MaxTransferBytesPerSecs int64  `prop:"maxHaTransferByteInSecond"`
	// AllAckInSyncStateSet (controller mode) makes a send wait until
	// every member of the sync-state set holds it.
	AllAckInSyncStateSet bool `prop:"allAckInSyncStateSet"`
	// MinInSyncReplicas (controller mode): a smaller sync-state set
	// refuses sends IN_SYNC_REPLICAS_NOT_ENOUGH (1, RocketMQ's default).
	MinInSyncReplicas int `prop:"minInSyncReplicas"`
}

// DefaultHAConfig returns RocketMQ 5.3.3's defaults.
func DefaultHAConfig() HAConfig {
	return HAConfig{
		SendHeartbeatInterval:   5000,
		MinInSyncReplicas:       1,
		HousekeepingInterval:    20000,
		TransferBatchSize:       32 << 10,
		MaxGapNotInSync:         256 << 20,
		InSyncReplicas:          1,
		SlaveTimeout:            3000,
		MaxTransferBytesPerSecs: 100 << 20,
	}
}

// checkRole applies RocketMQ's rule between brokerRole and brokerId: a
// master has id 0, a slave an id above 0.
func checkRole(role string, id int64) error {
	switch role {
	case "", store.AsyncMaster, store.SyncMaster:
		if id != 0 {
			return fmt.Errorf("%w: brokerId=%d with brokerRole=%s: a master's brokerId must be 0 (a slave needs brokerRole=SLAVE)", ErrConfig, id, roleName(role))
		}
	case store.Slave:
		if id <= 0 {
			return fmt.Errorf("%w: brokerId=%d with brokerRole=SLAVE: a slave's brokerId must be above 0", ErrConfig, id)
		}
	default:
		return fmt.Errorf("%w: brokerRole=%q (want ASYNC_MASTER, SYNC_MASTER or SLAVE)", ErrConfig, role)
	}
	return nil
}

func roleName(role string) string {
	if role == "" {
		return store.AsyncMaster
	}
	return role
}

// haListenPort is the port the master's HA listener binds: haListenPort,
// or the client port + 1 when it is <= 0 (port is the port the client
// listener got, which differs from listenPort only when that is 0).
func haListenPort(cfg *Config, port int) int {
	if cfg.HA.ListenPort <= 0 {
		return port + 1
	}
	return cfg.HA.ListenPort
}

// replication is the broker's side of classic master/slave replication:
// the HA master of a master broker, the HA client of a slave.
type replication struct {
	b      *Broker
	master *ha.Master
	slave  *ha.Slave
	ln     net.Listener
	haAddr masterAddr // the master's HA listener, as advertised (brokerIP2)
	// masterClient is a slave's master client address, from its registration
	// answers (masterAddr); metadata is copied from there.
	masterClient masterAddr
	// haMaster is the HA address a slave replicates from.
	haMaster masterAddr

	slaves slaveHosts
}

// slaveHosts is the admit rule's view of the name servers: the hosts of
// the addresses registered for this broker name with brokerId > 0.
type slaveHosts struct {
	mu      sync.Mutex
	byHost  map[string][]int64 // host -> ids registered from it
	fetched time.Time
}

// AdmitRule says whether an HA peer counts as a slave of brokerName: its
// IP is the host of an address the name servers' cluster table lists
// under brokerName with brokerId > 0. The peer is named by that id, or by
// its host when several slave ids share the host (they then count as one
// copy, never as several).
func AdmitRule(ci *namesrv.ClusterInfo, brokerName string, peer net.Addr) (string, bool) {
	return admitFrom(hostsOf(ci, brokerName), peer)
}

func hostsOf(ci *namesrv.ClusterInfo, brokerName string) map[string][]int64 {
	out := map[string][]int64{}
	if ci == nil {
		return out
	}
	bd, ok := ci.BrokerAddrTable[brokerName]
	if !ok {
		return out
	}
	for id, addr := range bd.BrokerAddrs {
		if id <= 0 {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		out[host] = append(out[host], id)
	}
	return out
}

func admitFrom(hosts map[string][]int64, peer net.Addr) (string, bool) {
	host, _, err := net.SplitHostPort(peer.String())
	if err != nil {
		return "", false
	}
	ids := hosts[host]
	switch len(ids) {
	case 0:
		return "", false
	case 1:
		return "brokerId=" + strconv.FormatInt(ids[0], 10) + "@" + host, true
	}
	return host, true
}

// refreshInterval bounds how often an unknown peer makes the master ask
// the name servers again.
const refreshInterval = time.Second

// admit is the master's Admit predicate: the cached table first, then,
// for a peer it does not know, the name servers' current table.
func (r *replication) admit(peer net.Addr) (string, bool) {
	r.slaves.mu.Lock()
	defer r.slaves.mu.Unlock()
	if name, ok := admitFrom(r.slaves.byHost, peer); ok {
		return name, true
	}
	if time.Since(r.slaves.fetched) < refreshInterval {
		return "", false
	}
	r.slaves.fetched = time.Now()
	if hosts, ok := r.fetchSlaveHosts(); ok {
		r.slaves.byHost = hosts
	}
	return admitFrom(r.slaves.byHost, peer)
}

// fetchSlaveHosts asks the in-process name server and those of
// namesrvAddr for the cluster table and merges the slaves of this broker
// name.
func (r *replication) fetchSlaveHosts() (map[string][]int64, bool) {
	b := r.b
	name := b.config().BrokerName
	merged := map[string][]int64{}
	got := false
	add := func(resp *remoting.Command) {
		if resp == nil || resp.Code != remoting.Success {
			return
		}
		var ci namesrv.ClusterInfo
		if err := adminbody.Unmarshal(resp.Body, &ci); err != nil {
			b.logger.Warn("ha: cluster info", "err", err)
			return
		}
		got = true
		for h, ids := range hostsOf(&ci, name) {
			merged[h] = append(merged[h], ids...)
		}
	}
	if b.registrar.local != nil {
		add(b.registrar.local.Handle(remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)))
	}
	for _, a := range namesrvAddrs(b.config().NamesrvAddr) {
		ctx, cancel := context.WithTimeout(b.registrar.base, 3*time.Second)
		resp, err := b.registrar.client.Invoke(ctx, a, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		cancel()
		if err != nil {
			b.logger.Warn("ha: cluster info", "namesrv", a, "err", err)
			continue
		}
		add(resp)
	}
	for h, ids := range merged {
		merged[h] = dedup(ids)
	}
	return merged, got
}

func dedup(ids []int64) []int64 {
	seen := map[int64]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// startReplication builds the HA master (masters) or starts the HA
// client (slaves) once the store runs, before the client listeners open.
func (b *Broker) startReplication() {
	cfg := b.config()
	st, ok := b.store.(*store.DefaultMessageStore)
	if !ok {
		return // a store of tests without a CommitLog to replicate
	}
	log := store.NewReplicaLog(st)
	r := &replication{b: b}
	hc := cfg.HA
	if b.storeConfig().BrokerRole == store.Slave {
		if !hc.SlaveReadEnable {
			b.logger.Warn("slave started with slaveReadEnable=false: pulls are answered PULL_RETRY_IMMEDIATELY, suggesting the master")
		}
		r.haMaster.set(strings.TrimSpace(hc.MasterAddress))
		r.slave = ha.NewSlave(ha.SlaveConfig{
			Log:                   log,
			MasterAddr:            strings.TrimSpace(hc.MasterAddress),
			Logger:                b.logger,
			SendHeartbeatInterval: millis(hc.SendHeartbeatInterval),
			HousekeepingInterval:  millis(hc.HousekeepingInterval),
			Dial:                  b.haDialer(),
		})
		r.slave.Start()
		b.offsets.TrackLocalCommits()
		b.loadCommitNote()
		_, onDisk := b.offsets.LocalCommitsVersion()
		b.repl = r
		b.background(func() { b.runSlaveSync(r) })
		b.background(func() { b.runSlaveResume(r) })
		b.background(func() { b.runCommitNote(millis(cfg.FlushConsumerOffsetInterval), onDisk) })
		return
	}
	if b.storeConfig().BrokerRole == store.SyncMaster && hc.InSyncReplicas < 2 {
		b.logger.Warn("SYNC_MASTER waits for one slave: inSyncReplicas below 2 counts as 2 (RocketMQ 5 would not wait at all)",
			"inSyncReplicas", hc.InSyncReplicas)
	}
	r.master = ha.NewMaster(ha.MasterConfig{
		Log:                       log,
		Admit:                     r.admit,
		Logger:                    b.logger,
		SendHeartbeatInterval:     millis(hc.SendHeartbeatInterval),
		HousekeepingInterval:      millis(hc.HousekeepingInterval),
		TransferBatchSize:         hc.TransferBatchSize,
		MaxGapNotInSync:           hc.MaxGapNotInSync,
		InSyncReplicas:            hc.InSyncReplicas,
		SlaveTimeout:              millis(hc.SlaveTimeout),
		FlowControl:               hc.FlowControlEnable,
		MaxTransferBytesPerSecond: hc.MaxTransferBytesPerSecs,
	})
	b.repl = r
}

// listenReplication opens a master's HA listener once the client port is
// known and serves slaves on it.
func (b *Broker) listenReplication(bind, ip string, port int) error {
	if b.sw != nil {
		return b.sw.listen(b.config(), bind, ip, port)
	}
	r := b.repl
	if r == nil || r.master == nil {
		return nil
	}
	cfg := b.config()
	hp := haListenPort(cfg, port)
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(hp)))
	if err != nil && cfg.ListenPort == 0 && cfg.HA.ListenPort <= 0 {
		// Any client port was asked for: any HA port will do too.
		ln, err = net.Listen("tcp", net.JoinHostPort(bind, "0"))
	}
	if err != nil && cfg.HA.ListenPort <= 0 && b.storeConfig().BrokerRole != store.SyncMaster {
		// An ASYNC_MASTER acknowledges alone: a busy default HA port
		// leaves it without slaves, not without service.
		b.logger.Warn("HA port busy: this ASYNC_MASTER runs without replication (set haListenPort to choose a port)",
			"port", hp, "err", err)
		return nil // the master is never served; shutdown closes it
	}
	if err != nil {
		return fmt.Errorf("listen on HA port %s:%d (haListenPort, default listenPort+1): %w", bind, hp, err)
	}
	wrapped, err := b.wrapListener("ha", ln)
	if err != nil {
		ln.Close()
		return err
	}
	ln = wrapped
	r.ln = ln
	host := ip
	if ip2 := strings.TrimSpace(cfg.BrokerIP2); ip2 != "" {
		host = ip2
	}
	r.haAddr.set(net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
	go r.master.Serve(ln)
	return nil
}

// advertisedHA is a master's HA address once it listens ("" otherwise).
func (r *replication) advertisedHA() string {
	if r == nil {
		return ""
	}
	return r.haAddr.get()
}

// notifyPut wakes the HA master's transfer loops after a put.
func (b *Broker) notifyPut() {
	if b.sw != nil {
		b.sw.notify()
		return
	}
	if r := b.repl; r != nil && r.master != nil {
		r.master.Notify()
	}
}

// waitReplicated is the data path's SYNC_MASTER wait (nil otherwise).
func (b *Broker) waitReplicated() func(end int64, done func(store.PutStatus)) {
	if b.sw != nil {
		return b.sw.waitReplicated
	}
	if b.storeConfig().BrokerRole != store.SyncMaster {
		return nil
	}
	return func(end int64, done func(store.PutStatus)) {
		r := b.repl
		if r == nil || r.master == nil {
			done(store.SlaveNotAvailable)
			return
		}
		r.master.Notify() // the records are appended: send them now
		r.master.WaitReplicated(end, func(o ha.Outcome) { done(replicaStatus(o)) })
	}
}

// replicaStatus maps the replication wait's outcome to the store's
// PutMessageStatus names.
func replicaStatus(o ha.Outcome) store.PutStatus {
	switch o {
	case ha.FlushSlaveTimeout:
		return store.FlushSlaveTimeout
	case ha.SlaveNotAvailable:
		return store.SlaveNotAvailable
	}
	return store.PutOK
}

// registered reads a registration answer: a slave without
// haMasterAddress follows the master HA address the name server names.
func (b *Broker) registered(resp *remoting.Command) {
	r := b.repl
	if r == nil || r.slave == nil {
		return
	}
	r.masterClient.set(resp.Ext("masterAddr"))
	if strings.TrimSpace(b.config().HA.MasterAddress) != "" {
		return
	}
	if addr := resp.Ext("haServerAddr"); r.haMaster.set(addr) {
		r.slave.SetMasterAddr(addr)
	}
}

// closeReplication stops the HA master or client (before the store).
func (b *Broker) closeReplication() {
	if b.sw != nil {
		b.sw.close()
	}
	r := b.repl
	if r == nil {
		return
	}
	if r.master != nil {
		r.master.Close()
	}
	if r.slave != nil {
		r.slave.Close()
	}
}

// masterUp reports, on a slave, whether its HA stream to the master is
// connected: the data path then suggests the master to caught-up
// consumers (a killed master's connection closes, or housekeeping closes
// it after haHousekeepingInterval of silence).
func (b *Broker) masterUp() bool {
	r := b.repl
	return r != nil && r.slave != nil && r.slave.Connected()
}

// isSlave reports whether the broker runs as a slave (brokerRole=SLAVE).
func (b *Broker) isSlave() bool { return b.storeConfig().BrokerRole == store.Slave }

// haConnectionInfo is one slave connection's figures in the runtime
// information, named as RocketMQ's HAConnectionRuntimeInfo fields.
type haConnectionInfo struct {
	Addr           string `json:"addr"`
	Slave          string `json:"slave"`
	Admitted       bool   `json:"admitted"`
	SlaveAckOffset int64  `json:"slaveAckOffset"`
	Diff           int64  `json:"diff"`
	LagMillis      int64  `json:"lagMillis"`
	InSync         bool   `json:"inSync"`
}

// replicationRuntimeInfo adds the replication figures to
// GET_BROKER_RUNTIME_INFO. RocketMQ's runtime table has no HA keys (its
// GET_BROKER_HA_STATUS answers them), so they are named after its
// HARuntimeInfo fields and its store's slaveFallBehindMuch.
func (b *Broker) replicationRuntimeInfo(t map[string]string) {
	t["brokerRole"] = roleName(b.storeConfig().BrokerRole)
	r := b.repl
	if r == nil {
		return
	}
	if r.master != nil {
		slaves := r.master.Slaves()
		t["haServerAddr"] = r.haAddr.get()
		t["haConnectionCount"] = strconv.Itoa(r.master.ConnectionCount())
		t["inSyncSlaveNums"] = strconv.Itoa(r.master.InSyncSlaves())
		end := b.store.MaxPhyOffset()
		t["masterCommitLogMaxOffset"] = strconv.FormatInt(end, 10)
		var best int64 = -1
		infos := make([]haConnectionInfo, 0, len(slaves))
		for _, s := range slaves {
			if s.Admitted && s.AckOffset > best {
				best = s.AckOffset
			}
			infos = append(infos, haConnectionInfo{Addr: s.Remote, Slave: s.Slave, Admitted: s.Admitted,
				SlaveAckOffset: s.AckOffset, Diff: s.LagBytes, LagMillis: s.LagTime.Milliseconds(), InSync: s.InSync})
		}
		// slaveFallBehindMuch: the master's end minus the furthest
		// admitted slave's acknowledgement (the whole log without one).
		if best < 0 {
			best = 0
		}
		t["slaveFallBehindMuch"] = strconv.FormatInt(max(end-best, 0), 10)
		if body, err := json.Marshal(infos); err == nil {
			t["haConnectionInfo"] = string(body)
		}
		return
	}
	if r.slave != nil {
		t["haMasterAddress"] = r.haMaster.get()
		t["masterAddr"] = r.masterClient.get()
		t["haClientConnected"] = strconv.FormatBool(r.slave.Connected())
		t["haClientConnects"] = strconv.FormatInt(r.slave.Connects(), 10)
		t["slaveMaxOffset"] = strconv.FormatInt(b.store.MaxPhyOffset(), 10)
		if err := r.slave.Err(); err != nil {
			t["haClientError"] = err.Error()
		}
		// The metadata copy (replica_sync.go): version checks, whole
		// tables fetched, offsets handed back to the master, and the
		// master's timer checkpoint last copied.
		t["slaveSyncVersionChecks"] = strconv.FormatInt(b.syncCounts.versionChecks.Load(), 10)
		t["slaveSyncTopicFetches"] = strconv.FormatInt(b.syncCounts.topicFetches.Load(), 10)
		t["slaveSyncGroupFetches"] = strconv.FormatInt(b.syncCounts.groupFetches.Load(), 10)
		t["slaveSyncOffsetsHandedBack"] = strconv.FormatInt(b.syncCounts.offsetsPushed.Load(), 10)
		t["slaveLocalOffsetsPending"] = strconv.Itoa(len(b.offsets.LocalCommits()))
		if ck := b.timerCopy.Load(); ck != nil {
			t["timerCheckpointCopiedReadTimeMs"] = strconv.FormatInt(ck.LastReadTimeMs, 10)
		}
	}
}
