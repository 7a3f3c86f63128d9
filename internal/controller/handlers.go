package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/controller/consensus"
	"github.com/spoolmq/spool/internal/controller/liveness"
	"github.com/spoolmq/spool/internal/controller/replicas"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// Codes lists the request codes the controller answers.
var Codes = []int32{
	remoting.BrokerHeartbeat,
	remoting.ControllerAlterSyncStateSet, remoting.ControllerElectMaster, remoting.ControllerRegisterBroker,
	remoting.ControllerGetReplicaInfo, remoting.ControllerGetMetadataInfo, remoting.ControllerGetSyncStateData,
	remoting.GetControllerConfig, remoting.CleanBrokerData,
	remoting.ControllerGetNextBrokerID, remoting.ControllerApplyBrokerID,
}

// Register registers the controller's handlers on srv: heartbeats on an
// executor of their own, so that they never queue behind requests that
// wait for a commit, each remembered with the connection it came on, and
// srv's connection closes to ConnClosed. config is the
// GET_CONTROLLER_CONFIG answer's body.
func (c *Controller) Register(srv *transport.Server, config []byte) {
	c.RegisterBeside(srv, config, nil)
}

// RegisterBeside registers the controller's handlers on a server that
// serves another component too (the name server, with
// enableControllerInNamesrv=true). host answers that component's
// requests: a BROKER_HEARTBEAT goes to host first, and then, when it
// carries brokerId (the controller-mode heartbeat; the name server's
// carries cluster, address and name only), to the controller, whose
// answer is returned. With host nil it is Register.
func (c *Controller) RegisterBeside(srv *transport.Server, config []byte, host transport.Handler) {
	hb := srv.NewExecutor(transport.ExecutorConfig{Name: "controllerHeartbeat", Workers: 2, QueueCapacity: 10000})
	req := srv.NewExecutor(transport.ExecutorConfig{Name: "controllerRequest", Workers: 4, QueueCapacity: 50000})
	srv.Register(remoting.BrokerHeartbeat, func(conn *transport.Conn, r *remoting.Command) *remoting.Command {
		var id uint64
		if conn != nil {
			id = conn.ID()
		}
		if host == nil {
			return c.handle(id, r)
		}
		own := host(conn, r)
		if _, ok := r.ExtFields["brokerId"]; !ok {
			return own
		}
		return c.handle(id, r)
	}, hb)
	srv.OnConnClose(func(conn *transport.Conn) { c.ConnClosed(conn.ID()) })
	for _, code := range Codes[1:] {
		if code == remoting.GetControllerConfig {
			srv.Register(code, func(_ *transport.Conn, r *remoting.Command) *remoting.Command {
				resp := remoting.NewResponse(r, remoting.Success, "")
				resp.Body = config
				return resp
			}, req)
			continue
		}
		srv.Register(code, func(_ *transport.Conn, r *remoting.Command) *remoting.Command {
			return c.Handle(r)
		}, req)
	}
}

// badRequest is a header that does not parse.
type badRequest struct{ error }

func i64(req *remoting.Command, k string, def int64) int64 {
	v := strings.TrimSpace(req.Ext(k))
	if v == "" || v == "null" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(badRequest{fmt.Errorf("header %s=%q: not a number", k, v)})
	}
	return n
}

func i32(req *remoting.Command, k string, def int32) int32 {
	n := i64(req, k, int64(def))
	if n != int64(int32(n)) {
		panic(badRequest{fmt.Errorf("header %s=%d: out of range", k, n)})
	}
	return int32(n)
}

func need(req *remoting.Command, k string) string {
	v := req.Ext(k)
	if v == "" {
		panic(badRequest{fmt.Errorf("header %s is missing", k)})
	}
	return v
}

// Handle answers one controller request that came on no known
// connection (a heartbeat's connection is then never seen closing).
func (c *Controller) Handle(req *remoting.Command) *remoting.Command { return c.handle(0, req) }

// handle answers one controller request that came on connection conn
// (0: unknown).
func (c *Controller) handle(conn uint64, req *remoting.Command) (resp *remoting.Command) {
	defer func() {
		if p := recover(); p != nil {
			br, ok := p.(badRequest)
			if !ok {
				panic(p)
			}
			resp = remoting.NewResponse(req, remoting.ControllerInvalidRequest, br.Error())
		}
	}()
	switch req.Code {
	case remoting.BrokerHeartbeat:
		return c.heartbeat(conn, req)
	case remoting.ControllerGetMetadataInfo:
		return c.metadata(req)
	}
	resp, err := c.leaderOnly(req)
	if err != nil {
		if errors.Is(err, consensus.ErrNotLeader) {
			id, addr := c.leaderInfo()
			return remoting.NewResponse(req, remoting.ControllerNotLeader,
				fmt.Sprintf("the controller is not the leader; the leader is %s (%s)", id, addr))
		}
		return remoting.NewResponse(req, remoting.ControllerJRaftInternalError, err.Error())
	}
	return resp
}

func (c *Controller) leaderOnly(req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.ControllerAlterSyncStateSet:
		return c.alterSyncStateSet(req)
	case remoting.ControllerElectMaster:
		return c.electMaster(req)
	case remoting.ControllerRegisterBroker:
		return c.registerBroker(req)
	case remoting.ControllerGetReplicaInfo:
		return c.replicaInfo(req)
	case remoting.ControllerGetSyncStateData:
		return c.syncStateData(req)
	case remoting.CleanBrokerData:
		return c.cleanBrokerData(req)
	case remoting.ControllerGetNextBrokerID:
		return c.nextBrokerID(req)
	case remoting.ControllerApplyBrokerID:
		return c.applyBrokerID(req)
	}
	return transport.NotSupported(nil, req), nil
}

func (c *Controller) heartbeat(conn uint64, req *remoting.Command) *remoting.Command {
	h := liveness.Heartbeat{
		ClusterName:   req.Ext("clusterName"),
		BrokerName:    need(req, "brokerName"),
		BrokerAddr:    req.Ext("brokerAddr"),
		BrokerID:      i64(req, "brokerId", 0),
		Epoch:         i32(req, "epoch", 0),
		MaxOffset:     i64(req, "maxOffset", 0),
		ConfirmOffset: i64(req, "confirmOffset", 0),
		Timeout:       time.Duration(i64(req, "heartbeatTimeoutMills", 0)) * time.Millisecond,
	}
	if req.Ext("electionPriority") != "" {
		p := i32(req, "electionPriority", liveness.DefaultPriority)
		h.Priority = &p
	}
	c.noteServing()
	c.noteTimeout(h.Timeout)
	if c.live.HeartbeatOn(conn, h) {
		c.kickRun() // a replica back in the table: its expiry is a wake-up
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

func (c *Controller) metadata(req *remoting.Command) *remoting.Command {
	id, addr := c.leaderInfo()
	var peers []string
	for _, p := range c.node.Peers() {
		peers = append(peers, p.ID+"-"+p.Addr)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("group", c.opts.Group)
	resp.SetExt("controllerLeaderId", id)
	resp.SetExt("controllerLeaderAddress", addr)
	resp.SetExt("isLeader", strconv.FormatBool(c.node.Serving()))
	resp.SetExt("peers", strings.Join(peers, ";"))
	return resp
}

// answer builds the response to a decided request.
func answer(req *remoting.Command, r replicas.Result) *remoting.Command {
	return remoting.NewResponse(req, r.Code, r.Remark)
}

func setMaster(resp *remoting.Command, b *replicas.BrokerSet, withSetEpoch bool) {
	resp.SetExt("masterBrokerId", strconv.FormatInt(b.MasterID, 10))
	resp.SetExt("masterAddress", b.MasterAddress())
	resp.SetExt("masterEpoch", strconv.Itoa(int(b.MasterEpoch)))
	if withSetEpoch {
		resp.SetExt("syncStateSetEpoch", strconv.Itoa(int(b.SyncStateSetEpoch)))
	}
}

func (c *Controller) alterSyncStateSet(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	var body SyncStateSet
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.ControllerInvalidRequest, "SyncStateSet body: "+err.Error()), nil
	}
	master, epoch := i64(req, "masterBrokerId", replicas.NoMaster), i32(req, "masterEpoch", 0)
	r, b, err := c.decide(name, func(st *replicas.State) replicas.Result {
		return st.AlterSyncStateSet(name, master, epoch, body.SyncStateSet, body.SyncStateSetEpoch, c.live)
	})
	if err != nil {
		return nil, err
	}
	resp := answer(req, r)
	if r.OK() && b != nil {
		resp.SetExt("newSyncStateSetEpoch", strconv.Itoa(int(b.SyncStateSetEpoch)))
		resp.Body = setBody(b)
	}
	return resp, nil
}

func (c *Controller) electMaster(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	id := i64(req, "brokerId", replicas.ControllerTriggered)
	designate := strings.EqualFold(req.Ext("designateElect"), "true")
	r, b, err := c.decide(name, func(st *replicas.State) replicas.Result {
		return st.ElectMaster(name, id, designate, c.policy(), c.live)
	})
	if err != nil {
		return nil, err
	}
	resp := answer(req, r)
	if b != nil && (r.OK() || r.Code == remoting.ControllerMasterStillExist) {
		// As RocketMQ: the member group only with a new master.
		setMaster(resp, b, true)
		body := ElectMasterResponseBody{SyncStateSet: sortedIDs(b.SyncStateSet)}
		if r.OK() {
			body.BrokerMemberGroup = memberGroup(b)
		}
		resp.Body, _ = json.Marshal(body)
	}
	if r.OK() {
		c.notify(b)
		c.kickRun() // a new master to watch
	}
	return resp, nil
}

func (c *Controller) registerBroker(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	id := i64(req, "brokerId", 0)
	addr := req.Ext("brokerAddress")
	r, b, err := c.decide(name, func(st *replicas.State) replicas.Result { return st.RegisterBroker(name, id, addr) })
	if err != nil {
		return nil, err
	}
	resp := answer(req, r)
	if r.OK() && b != nil {
		resp.SetExt("clusterName", b.ClusterName)
		resp.SetExt("brokerName", name)
		if b.HasMaster() && c.live.Alive(b.ClusterName, name, b.MasterID) {
			setMaster(resp, b, true)
		}
		resp.Body = setBody(b)
	}
	return resp, nil
}

// current is the read gate: the leader confirms its leadership first.
func (c *Controller) current() error {
	return c.node.VerifyLeader()
}

func (c *Controller) replicaInfo(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	if err := c.current(); err != nil {
		return nil, err
	}
	b := c.snapshotSet(name)
	if b == nil {
		return remoting.NewResponse(req, remoting.ControllerBrokerMetadataNotExist, "broker "+name+" is not registered"), nil
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	setMaster(resp, b, false)
	resp.Body = setBody(b)
	return resp, nil
}

func (c *Controller) syncStateData(req *remoting.Command) (*remoting.Command, error) {
	var names []string
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &names); err != nil {
			return remoting.NewResponse(req, remoting.ControllerInvalidRequest, "broker names body: "+err.Error()), nil
		}
	}
	if err := c.current(); err != nil {
		return nil, err
	}
	out := BrokerReplicasInfo{ReplicasInfoTable: map[string]ReplicasInfo{}}
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) {
		if len(names) == 0 {
			names = st.Names()
		}
		for _, name := range names {
			b := st.Set(name)
			if b == nil {
				continue
			}
			info := ReplicasInfo{MasterBrokerID: b.MasterID, MasterAddress: b.MasterAddress(), MasterEpoch: b.MasterEpoch,
				SyncStateSetEpoch: b.SyncStateSetEpoch, InSyncReplicas: []ReplicaIdentity{}, NotInSyncReplicas: []ReplicaIdentity{}}
			for _, id := range b.IDs() {
				ri := ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: b.Replicas[id].Address,
					Alive: c.live.Alive(b.ClusterName, name, id)}
				if b.InSync(id) {
					info.InSyncReplicas = append(info.InSyncReplicas, ri)
				} else {
					info.NotInSyncReplicas = append(info.NotInSyncReplicas, ri)
				}
			}
			out.ReplicasInfoTable[name] = info
		}
	})
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body, _ = json.Marshal(out)
	return resp, nil
}

func (c *Controller) cleanBrokerData(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	var ids []int64
	for _, f := range strings.Split(req.Ext("brokerControllerIdsToClean"), ";") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return remoting.NewResponse(req, remoting.ControllerInvalidCleanBrokerMetadata, "brokerControllerIdsToClean: "+f+" is not an id"), nil
		}
		ids = append(ids, n)
	}
	living := strings.EqualFold(req.Ext("isCleanLivingBroker"), "true")
	var cluster string
	removed := ids
	r, _, err := c.decide(name, func(st *replicas.State) replicas.Result {
		if b := st.Set(name); b != nil {
			cluster = b.ClusterName
			if len(ids) == 0 {
				removed = b.IDs()
			}
		}
		return st.CleanBrokerData(name, ids, living, c.live)
	})
	if err != nil {
		return nil, err
	}
	if r.OK() {
		for _, id := range removed {
			c.live.Remove(cluster, name, id)
		}
	}
	return answer(req, r), nil
}

func (c *Controller) nextBrokerID(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	if err := c.current(); err != nil {
		return nil, err
	}
	var next int64
	c.node.Read(func(st *replicas.State, _ replicas.Controllers) { next = st.NextBrokerID(name) })
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("clusterName", req.Ext("clusterName"))
	resp.SetExt("brokerName", name)
	resp.SetExt("nextBrokerId", strconv.FormatInt(next, 10))
	return resp, nil
}

func (c *Controller) applyBrokerID(req *remoting.Command) (*remoting.Command, error) {
	name := need(req, "brokerName")
	cluster := req.Ext("clusterName")
	id := i64(req, "appliedBrokerId", 0)
	code := need(req, "registerCheckCode")
	r, _, err := c.decide(name, func(st *replicas.State) replicas.Result { return st.ApplyBrokerID(cluster, name, id, code) })
	if err != nil {
		return nil, err
	}
	resp := answer(req, r)
	resp.SetExt("clusterName", cluster)
	resp.SetExt("brokerName", name)
	return resp, nil
}

// ConfigBody renders properties as GET_CONTROLLER_CONFIG's body
// ("key=value" lines, sorted).
func ConfigBody(props map[string]string) []byte {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + props[k] + "\n")
	}
	return []byte(b.String())
}
