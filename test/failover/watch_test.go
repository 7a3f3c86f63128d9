package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/spoolmq/spool/internal/ctlbody"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// view is one broker set as the controller leader describes it
// (CONTROLLER_GET_SYNC_STATE_DATA).
type view struct {
	At                time.Time // when the watcher first saw it
	Leader            string    // the controller that answered
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
	InSync            []string // addresses of the sync-state set's members
}

func (v view) same(o view) bool {
	return v.MasterID == o.MasterID && v.MasterAddr == o.MasterAddr && v.MasterEpoch == o.MasterEpoch &&
		v.SyncStateSetEpoch == o.SyncStateSetEpoch && slices.Equal(v.SyncStateSet, o.SyncStateSet) && slices.Equal(v.InSync, o.InSync)
}

func (v view) String() string {
	return fmt.Sprintf("%s leader %s: master %d %s epoch %d, sync-state set %v %v epoch %d",
		v.At.Format("15:04:05.000"), v.Leader, v.MasterID, v.MasterAddr, v.MasterEpoch, v.SyncStateSet, v.InSync, v.SyncStateSetEpoch)
}

// watcher polls the controllers every pollEvery and keeps every change
// of one broker set's view.
type watcher struct {
	addrs []string
	name  string
	cl    *transport.Client
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	views   []view
	leaderA string
	lastOK  time.Time // the last poll the leader answered
}

const pollEvery = 100 * time.Millisecond

func newWatcher(addrs []string, brokerName string) *watcher {
	w := &watcher{addrs: addrs, name: brokerName, cl: transport.NewClient(transport.ClientConfig{DialTimeout: time.Second}),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *watcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
		<-w.done
		w.cl.Close()
	}
}

func (w *watcher) run() {
	defer close(w.done)
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		w.poll()
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

func (w *watcher) call(addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return w.cl.Invoke(ctx, addr, req)
}

// poll finds the leader (a stopped controller only costs a timeout) and
// reads the broker set from it.
func (w *watcher) poll() {
	w.mu.Lock()
	leader := w.leaderA
	w.mu.Unlock()
	order := append([]string{leader}, w.addrs...)
	for _, a := range order {
		if a == "" {
			continue
		}
		names, _ := json.Marshal([]string{w.name})
		resp, err := w.call(a, remoting.NewRequest(remoting.ControllerGetSyncStateData, nil, names))
		if err != nil || resp.Code == remoting.ControllerNotLeader {
			continue
		}
		w.mu.Lock()
		w.leaderA = a
		w.mu.Unlock()
		var body ctlbody.BrokerReplicasInfo
		if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &body) != nil {
			return
		}
		info, ok := body.ReplicasInfoTable[w.name]
		if !ok {
			return // not registered yet
		}
		v := view{At: time.Now(), Leader: a, MasterID: info.MasterBrokerID, MasterAddr: info.MasterAddress,
			MasterEpoch: info.MasterEpoch, SyncStateSetEpoch: info.SyncStateSetEpoch}
		for _, r := range info.InSyncReplicas {
			v.SyncStateSet = append(v.SyncStateSet, r.BrokerID)
			v.InSync = append(v.InSync, r.BrokerAddress)
		}
		slices.Sort(v.SyncStateSet)
		slices.Sort(v.InSync)
		w.mu.Lock()
		w.lastOK = v.At
		if n := len(w.views); n == 0 || !w.views[n-1].same(v) {
			w.views = append(w.views, v)
		}
		w.mu.Unlock()
		return
	}
}

// current is the last view seen (zero before the first).
func (w *watcher) current() view {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.views) == 0 {
		return view{}
	}
	return w.views[len(w.views)-1]
}

// answeredAt is when the leader last answered a poll.
func (w *watcher) answeredAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastOK
}

// leader is the controller that answered last.
func (w *watcher) leader() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leaderA
}

// since returns the views first seen at or after t.
func (w *watcher) since(t time.Time) []view {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []view
	for _, v := range w.views {
		if !v.At.Before(t) {
			out = append(out, v)
		}
	}
	return out
}

// await waits until cond holds for the current view.
func (w *watcher) await(limit time.Duration, what string, cond func(view) bool) (view, error) {
	deadline := time.Now().Add(limit)
	for {
		v := w.current()
		if cond(v) {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("timed out after %v waiting for %s; last view: %v", limit, what, v)
		}
		time.Sleep(pollEvery / 2)
	}
}

// awaitLeader waits until some controller answers as the leader.
func (w *watcher) awaitLeader(limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		if l := w.leader(); l != "" {
			return l, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no controller answered as the leader within %v", limit)
		}
		time.Sleep(pollEvery / 2)
	}
}

// epochOf attributes an acknowledgement by addr at time at to a master
// epoch: the newest epoch whose master was addr and that the watcher had
// seen by then (allowing one poll of lag), else the oldest epoch addr
// was ever master of; 0 when addr was never master.
func (w *watcher) epochOf(addr string, at time.Time) int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best, first int32
	for _, v := range w.views {
		if v.MasterAddr != addr || v.MasterEpoch == 0 {
			continue
		}
		if first == 0 || v.MasterEpoch < first {
			first = v.MasterEpoch
		}
		if !v.At.After(at.Add(2*pollEvery)) && v.MasterEpoch > best {
			best = v.MasterEpoch
		}
	}
	if best != 0 {
		return best
	}
	return first
}

// history is every view seen, one a line.
func (w *watcher) history() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, v := range w.views {
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	return b.String()
}
