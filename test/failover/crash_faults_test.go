package failover

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/store"
)

// This file holds the faults that leave a replica's store as a crash of
// the machine, not of the process, would: a replica restarted with its
// unsynced tail dropped, and a former master killed in the middle of the
// truncation it makes on rejoining as a slave.

// dropTail kills r with SIGKILL (the page cache keeps every byte it
// wrote) and then drops from its store what the store does not record as
// durable (store.DropUnflushedTail: the CommitLog from the checkpoint's
// flushed offset on), as a power cut would leave it.
func (r *replica) dropTail() (store.DroppedTail, error) {
	r.kill()
	d, err := store.DropUnflushedTail(nil, store.Config{StorePathRootDir: r.store})
	if err != nil {
		return d, fmt.Errorf("%s: %w", r.name, err)
	}
	return d, nil
}

// tailDropped is the fault "<role> restarted, unsynced tail dropped": the
// replica is killed, its unsynced tail dropped, and it starts again at
// the heal (2 s later, within the controllers' heartbeat timeout, so a
// master comes back before any election: the case where a shortened log
// would be served as the master's).
func tailDropped(master bool) func(c *cluster) func() error {
	return func(c *cluster) func() error {
		v, m := c.master()
		r := m
		if !master {
			r = nil
			for _, x := range c.a {
				if x.addr != v.MasterAddr && x.running() && !x.isPaused() {
					r = x
					break
				}
			}
		}
		if r == nil || !r.running() {
			return func() error { return fmt.Errorf("no running replica to drop the tail of") }
		}
		d, err := r.dropTail()
		if err != nil {
			return func() error { return errors.Join(err, r.startIfStopped()) }
		}
		c.t.Logf("%s: dropped %d unflushed CommitLog bytes from offset %d", r.name, d.Bytes, d.From)
		return r.startIfStopped
	}
}

// crashPoints are the steps of the store's truncation (TruncateTo) a
// broker started with SPOOL_CRASH_AT kills itself at: the checkpoint
// lowered (nothing cut yet), the CommitLog cut (its consume queues and
// epoch file not yet), the consume queues and index cut (the epoch file
// not yet), the epoch file cut (the callbacks that lower consumer and
// delay offsets, timers and transactions not yet run).
var crashPoints = []string{"truncate-checkpoint", "truncate-commitlog", "truncate-queues", "truncate-epochs"}

var (
	crashMu   sync.Mutex
	crashNext int
	tailSeq   atomic.Int64
)

// nextCrashPoint rotates through crashPoints, one per injection.
func nextCrashPoint() string {
	crashMu.Lock()
	defer crashMu.Unlock()
	p := crashPoints[crashNext%len(crashPoints)]
	crashNext++
	return p
}

// leaveTail kills setA's master so that it holds records no other replica
// has: the running slaves are killed first (a slave stopped with SIGSTOP
// would still find the master's last records in its socket buffer), the
// master writes on for 2 s (a producer of the workload's sends to setA
// only, as well as the workload's own producers; allAckInSyncStateSet:
// the puts wait for acknowledgements that never come, so none of them is
// acknowledged), then it is killed and the slaves are started again, so
// the controllers elect one of them once the master's heartbeat times
// out. It returns the master, or an error when setA has no running master
// or slave.
func (c *cluster) leaveTail() (*replica, error) {
	v, m := c.master()
	if m == nil || !m.running() || m.isPaused() {
		return nil, fmt.Errorf("no running master (view %v)", v)
	}
	var slaves []*replica
	for _, r := range c.a {
		if r != m && r.running() && !r.isPaused() && slices.Contains(v.InSync, r.addr) {
			slaves = append(slaves, r)
		}
	}
	if len(slaves) == 0 {
		return nil, fmt.Errorf("no running slave in the sync-state set (view %v)", v)
	}
	// The master must be serving first: one restarted in its own epoch
	// refuses sends while it checks its sync-state set's logs, and would
	// write no tail.
	if c.w != nil {
		if err := c.w.awaitAckBy(m.addr, 60*time.Second); err != nil {
			return nil, err
		}
	}
	var tailer producerAPI
	name := fmt.Sprintf("tail%d", tailSeq.Add(1))
	if c.w != nil {
		tailer = c.w.newProducer(name, &setASelector{})
	}
	for _, s := range slaves {
		s.kill()
	}
	if tailer != nil {
		go func() {
			defer tailer.Shutdown()
			c.w.send(tailer, name, 1) // recorded should it be acknowledged
		}()
	}
	time.Sleep(2 * time.Second)
	m.kill()
	c.masterKilledAt = time.Now()
	var errs []error
	for _, s := range slaves {
		errs = append(errs, s.start())
	}
	return m, errors.Join(errs...)
}

// crashDuringTruncation starts r (a former master whose log runs past the
// new master's epoch) with SPOOL_CRASH_AT=point, requires it to kill
// itself there while it truncates on becoming a slave, and starts it
// again without the hook.
func (c *cluster) crashDuringTruncation(r *replica, point string) error {
	marker := fmt.Sprintf("SPOOL_CRASH_AT=%s reached", point)
	seen := strings.Count(r.output(), marker)
	err := r.startWithEnv("SPOOL_CRASH_AT=" + point)
	switch {
	case err == nil:
		if !r.awaitExit(90 * time.Second) {
			r.kill()
			err = fmt.Errorf("%s did not reach %s within 90s: it truncated nothing on rejoining; its output ends:\n%s", r.name, point, tail(r.output()))
		}
	case errors.Is(err, errExited):
		err = nil // it reached the point before it printed ready
	}
	if err == nil && strings.Count(r.output(), marker) == seen {
		err = fmt.Errorf("%s exited, not at %s; output:\n%s", r.name, point, tail(r.output()))
	}
	if err != nil {
		return errors.Join(err, r.startIfStopped())
	}
	c.t.Logf("%s killed itself at %s", r.name, point)
	return nil
}

// startWithEnv starts p with env added to its environment (this start
// only).
func (p *proc) startWithEnv(env ...string) error {
	p.mu.Lock()
	p.env = env
	p.mu.Unlock()
	return p.start()
}

// killedDuringTruncation is the fault "slave killed during truncation":
// the master is killed holding records no other replica has (leaveTail);
// at the heal, once another replica is master of a newer epoch, it
// starts again, cuts those records to rejoin as a slave, is killed at one
// step of the cut (crashPoints, in turn), and starts again.
func killedDuringTruncation(c *cluster) func() error {
	m, err := c.leaveTail()
	if m == nil {
		return func() error { return err }
	}
	point := nextCrashPoint()
	return func() error {
		if err != nil {
			return errors.Join(err, m.startIfStopped())
		}
		if v := c.view.current(); v.MasterAddr == "" || v.MasterAddr == m.addr {
			// No other master to rejoin (the other fault of a pair left
			// none electable): nothing to truncate.
			c.t.Logf("%s: no other master (view %v); started without %s", m.name, v, point)
			return m.startIfStopped()
		}
		if err := c.crashDuringTruncation(m, point); err != nil {
			return err
		}
		return m.start()
	}
}
