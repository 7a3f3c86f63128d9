package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/internal/clock"
)

// SwitchLog is the CommitLog and its epoch table as controller-mode
// replication sees them. The store implements it (the broker adapts
// store.ReplicaLog); ha never imports the store.
type SwitchLog interface {
	Log
	// Epochs is the epoch table, oldest first.
	Epochs() []Epoch
	// AppendEpoch adds an entry above the last one, durably.
	AppendEpoch(e Epoch) error
	// TruncateEpochsFrom drops the entries of epoch or later, durably.
	TruncateEpochsFrom(epoch int32) error
	// Truncate cuts the log at offset (lowered to the last complete
	// record) with everything built from it and the epochs starting at or
	// past it, durably, and returns the offset cut at.
	Truncate(offset int64) (int64, error)
	// SetConfirmOffset moves the offset consume-queue dispatch may reach.
	SetConfirmOffset(offset int64)
	// RefusePuts makes the store refuse puts with remark ("" lifts it).
	RefusePuts(remark string)
	// RebuildQueueOffsets sets each queue's next offset from the records
	// (a new master's queues continue its log, dispatched or not).
	RebuildQueueOffsets() error
	// Sync makes the log durable up to end.
	Sync(end int64) error
}

// SwitchConfig configures an AutoSwitch. Zero durations and sizes take
// RocketMQ's defaults.
type SwitchConfig struct {
	Log SwitchLog
	// BrokerID is this broker's controller-assigned id (sent in the
	// handshake when it is a slave, counted as the master's own copy).
	BrokerID int64
	Clock    clock.Clock
	Logger   *slog.Logger
	// Admit, when set, says whether a connection that announced brokerID
	// in its handshake may be that replica (its address is the one the
	// controller registered for the id); a refused connection is closed.
	// nil admits every handshake (acknowledgements still count only for
	// sync-state-set members).
	Admit func(brokerID int64, remote net.Addr) bool
	// Dial opens a slave's connection (net.Dialer.DialContext when nil).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// ResolveMaster, when set, is called by a slave before every
	// connection attempt with the address ChangeToSlave was given; the
	// address it returns is dialed ("" dials the given one). It may ask
	// the master (a just-elected master may not answer yet, so it is asked
	// again on every attempt); ctx ends when the role changes.
	ResolveMaster func(ctx context.Context, addr string) string

	SendHeartbeatInterval time.Duration // haSendHeartbeatInterval
	HousekeepingInterval  time.Duration // haHousekeepingInterval
	ReconnectInterval     time.Duration
	TransferBatchSize     int           // haTransferBatchSize
	SlaveTimeout          time.Duration // slaveTimeout: how long a send waits for its copies
	PollInterval          time.Duration // idle transfer loops re-check the log this often
	// AllAckInSyncStateSet (allAckInSyncStateSet): a send waits until
	// every member of the sync-state set holds it.
	AllAckInSyncStateSet bool
	// InSyncReplicas (inSyncReplicas, master counted) is the number of
	// copies a send waits for without AllAckInSyncStateSet (1: none).
	InSyncReplicas int
	// MinInSyncReplicas (minInSyncReplicas): with a smaller sync-state
	// set sends are refused IN_SYNC_REPLICAS_NOT_ENOUGH.
	MinInSyncReplicas int
	SyncFromLastFile  bool // syncFromLastFile (as a slave)
	AsyncLearner      bool // asyncLearner (as a slave: never in the set)
}

func (c *SwitchConfig) defaults() {
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SendHeartbeatInterval <= 0 {
		c.SendHeartbeatInterval = DefaultSendHeartbeatInterval
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.ReconnectInterval <= 0 {
		c.ReconnectInterval = DefaultReconnectInterval
	}
	if c.TransferBatchSize <= 0 {
		c.TransferBatchSize = DefaultTransferBatchSize
	}
	if c.SlaveTimeout <= 0 {
		c.SlaveTimeout = DefaultSlaveTimeout
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.InSyncReplicas <= 0 {
		c.InSyncReplicas = 1
	}
	if c.MinInSyncReplicas <= 0 {
		c.MinInSyncReplicas = 1
	}
	if c.Dial == nil {
		c.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
}

type switchRole int

const (
	roleNone switchRole = iota
	roleMaster
	roleSlave
)

// ReplicaState is one slave as its master sees it (the controller
// client's view, for sync-state-set reports).
type ReplicaState struct {
	BrokerID   int64
	Addr       string    // the slave's address as its connection shows it
	AckOffset  int64     // highest offset the slave acknowledged (-1 before its first report)
	CaughtUpAt time.Time // last time AckOffset reached the master's end in the current epoch (zero if never)
}

// Errors of role changes.
var (
	ErrStaleEpoch = errors.New("ha: the role change's epoch is older than this broker's")
	ErrClosed     = errors.New("ha: closed")
)

// Remarks sends are refused with.
const (
	RemarkFenced       = "[FENCED] this master lost its controller lease and stopped acknowledging sends; retry on the new master"
	RemarkSlave        = "the broker is a slave in controller mode (enableControllerMode=true); send to its master"
	RemarkNotEnough    = "in-sync replicas not enough"
	remarkBecomeMaster = "the broker is becoming the master"
)

// AutoSwitch is controller-mode replication (RocketMQ 5's AutoSwitch HA
// service): as a master it serves slaves on the HA listener with the
// epoch handshake and keeps the confirm offset (the minimum over the
// sync-state set); as a slave it follows its master, cutting its log to
// the consistent point of the two epoch tables first. The broker's
// controller client drives it (ChangeToMaster, ChangeToSlave,
// SetSyncStateSet, SetFenced).
type AutoSwitch struct {
	cfg SwitchConfig

	roleMu sync.Mutex // one role change at a time (they release mu while they cut the log)

	mu       sync.Mutex
	role     switchRole
	epoch    int32
	set      []int64
	setEpoch int32
	fenced   bool
	confirm  int64
	group    *GroupTransfer
	conns    map[*switchConn]struct{}
	client   *switchClient
	closed   bool
	ln       net.Listener

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewAutoSwitch returns an AutoSwitch with no role: sends are refused
// until the controller names a master.
func NewAutoSwitch(cfg SwitchConfig) *AutoSwitch {
	cfg.defaults()
	a := &AutoSwitch{cfg: cfg, epoch: -1, conns: map[*switchConn]struct{}{}, stop: make(chan struct{}), confirm: -1}
	if l := lastEpoch(cfg.Log.Epochs()); l >= 0 {
		a.epoch = l
	}
	cfg.Log.RefusePuts("the broker has no role yet (controller mode: waiting for the controller)")
	a.wg.Add(1)
	go a.poll()
	return a
}

func lastEpoch(es []Epoch) int32 {
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Epoch
}

// Serve accepts slave connections on ln until Close; connections that
// arrive while this broker is not the master are closed at once.
func (a *AutoSwitch) Serve(ln net.Listener) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	a.ln = ln
	a.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-a.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		a.accept(c)
	}
}

// Close stops every connection and answers the waiting sends.
func (a *AutoSwitch) Close() {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.stop)
	if a.ln != nil {
		a.ln.Close()
	}
	conns, client, group := a.takeLinksLocked()
	a.mu.Unlock()
	closeLinks(conns, client, group)
	a.wg.Wait()
}

func (a *AutoSwitch) takeLinksLocked() ([]*switchConn, *switchClient, *GroupTransfer) {
	var conns []*switchConn
	for c := range a.conns {
		conns = append(conns, c)
	}
	client, group := a.client, a.group
	a.client, a.group = nil, nil
	return conns, client, group
}

func closeLinks(conns []*switchConn, client *switchClient, group *GroupTransfer) {
	for _, c := range conns {
		c.close("role change")
	}
	if client != nil {
		client.close()
	}
	if group != nil {
		group.Close() // waiting sends: FLUSH_SLAVE_TIMEOUT
	}
}

// ChangeToMaster makes this broker the master of masterEpoch with the
// given sync-state set. It returns once the epoch's entry (the epoch
// starting at the local end) is durable in the epoch file; from then on
// sends are accepted.
func (a *AutoSwitch) ChangeToMaster(masterEpoch int32, syncStateSet []int64, syncStateSetEpoch int32) error {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	if masterEpoch < a.epoch {
		cur := a.epoch
		a.mu.Unlock()
		return fmt.Errorf("%w: master epoch %d, this broker is at %d", ErrStaleEpoch, masterEpoch, cur)
	}
	if masterEpoch == a.epoch && a.role == roleMaster {
		a.setLocked(syncStateSet, syncStateSetEpoch)
		a.mu.Unlock()
		return nil
	}
	a.cfg.Log.RefusePuts(remarkBecomeMaster)
	conns, client, group := a.takeLinksLocked()
	a.role = roleNone
	a.mu.Unlock()
	closeLinks(conns, client, group)

	log := a.cfg.Log
	// The new epoch starts after the last complete record: partial bytes
	// a transfer left are cut. Everything up to the confirm offset is
	// here: the controller elects from the sync-state set, whose members
	// all hold it.
	end, err := log.Truncate(log.MaxOffset())
	if err != nil {
		return fmt.Errorf("ha: become master of epoch %d: %w", masterEpoch, err)
	}
	if err := log.TruncateEpochsFrom(masterEpoch + 1); err != nil {
		return err
	}
	// What this broker was elected holding is durable before the epoch
	// begins: an election leaves the sync-state set this broker alone,
	// and the slaves that also hold those bytes may cut them to follow
	// it, so a power cut of this broker must not take them.
	if err := log.Sync(end); err != nil {
		return fmt.Errorf("ha: become master of epoch %d: %w", masterEpoch, err)
	}
	if lastEpoch(log.Epochs()) != masterEpoch {
		// A new epoch (not this broker's own epoch again after a restart).
		es := log.Epochs()
		for len(es) > 0 && es[len(es)-1].StartOffset >= end {
			// An earlier epoch that wrote nothing: the new one replaces it.
			if err := log.TruncateEpochsFrom(es[len(es)-1].Epoch); err != nil {
				return err
			}
			es = log.Epochs()
		}
		if err := log.AppendEpoch(Epoch{Epoch: masterEpoch, StartOffset: end}); err != nil {
			return fmt.Errorf("ha: become master of epoch %d: %w", masterEpoch, err)
		}
	}
	if err := log.RebuildQueueOffsets(); err != nil {
		return fmt.Errorf("ha: become master of epoch %d: %w", masterEpoch, err)
	}
	a.mu.Lock()
	a.role, a.epoch = roleMaster, masterEpoch
	a.confirm = max(a.confirm, 0)
	a.group = NewGroupTransfer(a.cfg.Clock)
	a.setLocked(syncStateSet, syncStateSetEpoch)
	fenced := a.fenced
	a.mu.Unlock()
	a.acked()
	if !fenced {
		log.RefusePuts("")
	}
	a.cfg.Logger.Info("ha: master", "epoch", masterEpoch, "epochStartOffset", end, "syncStateSet", syncStateSet)
	return nil
}

// ChangeToSlave makes this broker a slave of masterID at masterHAAddr in
// masterEpoch (with a ResolveMaster, at what it resolves masterHAAddr to
// before each connection attempt): sends are refused at once; the HA
// client then cuts the log to the consistent point agreed with the new
// master before it appends or acknowledges anything.
func (a *AutoSwitch) ChangeToSlave(masterID int64, masterHAAddr string, masterEpoch int32) error {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	if masterEpoch < a.epoch {
		cur := a.epoch
		a.mu.Unlock()
		return fmt.Errorf("%w: master epoch %d, this broker is at %d", ErrStaleEpoch, masterEpoch, cur)
	}
	if a.role == roleSlave && a.epoch == masterEpoch && a.client != nil && a.client.addr == masterHAAddr {
		a.mu.Unlock()
		return nil
	}
	a.cfg.Log.RefusePuts(RemarkSlave)
	conns, client, group := a.takeLinksLocked()
	a.role, a.epoch, a.set = roleSlave, masterEpoch, nil
	c := newSwitchClient(a, masterID, masterHAAddr)
	a.client = c
	a.mu.Unlock()
	closeLinks(conns, client, group)
	c.start()
	a.cfg.Logger.Info("ha: slave", "master", masterID, "masterHAAddr", masterHAAddr, "epoch", masterEpoch)
	return nil
}

// SetSyncStateSet records a sync-state set the controller accepted
// (master only): it changes which acknowledgements count.
func (a *AutoSwitch) SetSyncStateSet(set []int64, syncStateSetEpoch int32) {
	a.mu.Lock()
	if a.role == roleMaster {
		a.setLocked(set, syncStateSetEpoch)
	}
	a.mu.Unlock()
	a.acked()
}

func (a *AutoSwitch) setLocked(set []int64, epoch int32) {
	if epoch < a.setEpoch && a.set != nil {
		return
	}
	s := slices.Clone(set)
	if !slices.Contains(s, a.cfg.BrokerID) {
		s = append(s, a.cfg.BrokerID)
	}
	slices.Sort(s)
	a.set, a.setEpoch = slices.Compact(s), epoch
}

// SetFenced(true) makes a master stop acknowledging: sends are refused at
// once with RemarkFenced and waiting sends are answered Fenced.
// SetFenced(false) lifts it.
func (a *AutoSwitch) SetFenced(fenced bool) {
	a.mu.Lock()
	a.fenced = fenced
	role, group := a.role, a.group
	a.mu.Unlock()
	switch {
	case fenced:
		a.cfg.Log.RefusePuts(RemarkFenced)
		if group != nil {
			group.FailAll(Fenced)
		}
	case role == roleMaster:
		a.cfg.Log.RefusePuts("")
		a.acked()
	}
}

// MasterEpoch is the epoch of this broker's current role (-1 before any).
func (a *AutoSwitch) MasterEpoch() int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.epoch
}

// MaxOffset is the end of the local CommitLog.
func (a *AutoSwitch) MaxOffset() int64 { return a.cfg.Log.MaxOffset() }

// ConfirmOffset is the highest offset every member of the sync-state set
// holds (on a slave: the master's, capped at the local end).
func (a *AutoSwitch) ConfirmOffset() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(a.confirm, 0)
}

// SyncStateSet is the set acknowledgements count against and its epoch.
func (a *AutoSwitch) SyncStateSet() ([]int64, int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.set), a.setEpoch
}

// IsMaster reports whether this broker is the master now.
func (a *AutoSwitch) IsMaster() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.role == roleMaster
}

// Replicas reports, on a master, each connected slave's state (one per
// broker id: the connection with the highest acknowledgement; not the
// asynchronous learners, which never join the sync-state set).
func (a *AutoSwitch) Replicas() []ReplicaState {
	a.mu.Lock()
	defer a.mu.Unlock()
	best := map[int64]ReplicaState{}
	for c := range a.conns {
		s, ok := c.replicaState()
		if !ok {
			continue
		}
		if b, seen := best[s.BrokerID]; !seen || s.AckOffset > b.AckOffset {
			best[s.BrokerID] = s
		}
	}
	out := make([]ReplicaState, 0, len(best))
	for _, s := range best {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y ReplicaState) int { return int(x.BrokerID - y.BrokerID) })
	return out
}

// AdmitPut is asked before a send is stored: PutOK-equivalent ok=true,
// or the outcome it is refused with (Fenced, InSyncReplicasNotEnough,
// NotMaster).
func (a *AutoSwitch) AdmitPut() (Outcome, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.role != roleMaster:
		return NotMaster, false
	case a.fenced:
		return Fenced, false
	case len(a.set) < a.cfg.MinInSyncReplicas:
		return InSyncReplicasNotEnough, false
	}
	return ReplicaOK, true
}

// WaitReplicated answers done once the records ending at end are held by
// the copies the configuration asks for: every member of the sync-state
// set with AllAckInSyncStateSet, else InSyncReplicas copies (1: at once).
func (a *AutoSwitch) WaitReplicated(end int64, done func(Outcome)) {
	if o, ok := a.AdmitPut(); !ok {
		done(o)
		return
	}
	a.notifyConns()
	a.mu.Lock()
	group := a.group
	need := a.cfg.AllAckInSyncStateSet || a.cfg.InSyncReplicas > 1
	a.mu.Unlock()
	if !need || group == nil {
		a.acked()
		if group == nil {
			done(NotMaster)
			return
		}
		done(ReplicaOK)
		return
	}
	group.Wait(end, a.cfg.SlaveTimeout, 1, 1, done)
	a.acked()
}

// Notify tells the transfer loops that the log grew and moves the confirm
// offset of a master alone in its set.
func (a *AutoSwitch) Notify() {
	a.notifyConns()
	a.acked()
}

func (a *AutoSwitch) notifyConns() {
	a.mu.Lock()
	for c := range a.conns {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	a.mu.Unlock()
}

// acked recomputes the confirm offset and the offset the waiting sends
// are answered up to, from the members' acknowledgements.
func (a *AutoSwitch) acked() {
	end := a.cfg.Log.MaxOffset()
	a.mu.Lock()
	if a.role != roleMaster {
		a.mu.Unlock()
		return
	}
	acks := map[int64]int64{}
	for c := range a.conns {
		if id, ack, ok := c.ack(); ok {
			if old, seen := acks[id]; !seen || ack > old {
				acks[id] = ack
			}
		}
	}
	confirm, frozen := end, false
	var memberAcks []int64
	for _, id := range a.set {
		if id == a.cfg.BrokerID {
			continue
		}
		ack, ok := acks[id]
		if !ok {
			frozen = true // an unconnected member freezes it (#6662)
			continue
		}
		memberAcks = append(memberAcks, ack)
		confirm = min(confirm, ack)
	}
	if !frozen && confirm > a.confirm {
		a.confirm = confirm
	}
	cur := a.confirm
	group, fenced := a.group, a.fenced
	allAck, copies := a.cfg.AllAckInSyncStateSet, a.cfg.InSyncReplicas
	tooFew := len(a.set) < a.cfg.MinInSyncReplicas
	a.mu.Unlock()
	a.cfg.Log.SetConfirmOffset(cur)
	if group == nil || fenced {
		return
	}
	if allAck {
		if tooFew {
			// The set shrank below minInSyncReplicas while sends waited:
			// every member holding them is no longer minInSyncReplicas
			// copies, so none is acknowledged (RocketMQ's group transfer
			// acknowledges them once the set is the master alone).
			group.FailAll(InSyncReplicasNotEnough)
			return
		}
		group.Advance(cur)
		return
	}
	if q := QuorumOffset(memberAcks, copies); q >= 0 {
		group.Advance(min(q, end))
	}
}

// poll re-evaluates the confirm offset on the poll interval (acks and
// puts also do it at once).
func (a *AutoSwitch) poll() {
	defer a.wg.Done()
	for {
		select {
		case <-a.stop:
			return
		case <-a.cfg.Clock.After(a.cfg.PollInterval):
		}
		a.acked()
	}
}

// slaveConfirm records a slave's confirm offset from its master's frames.
func (a *AutoSwitch) slaveConfirm(c *switchClient, confirm int64) {
	a.mu.Lock()
	if a.client != c {
		a.mu.Unlock()
		return
	}
	a.confirm = confirm
	a.mu.Unlock()
	a.cfg.Log.SetConfirmOffset(confirm)
}
