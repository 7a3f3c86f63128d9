package broker

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
)

// routeBatch is a set of topic changes registered together.
type routeBatch struct {
	seq     uint64                           // batches are registered in seq order
	topics  map[string]*metadata.TopicConfig // created or updated topics
	at      map[string]int64                 // data version counter of each topic's change
	names   []string                         // every topic of the batch, deleted ones too
	changes []metadata.TopicChange           // for the topic journal
	full    bool                             // a topic was deleted: register the whole table
	version metadata.DataVersion             // the newest change's data version
	done    chan struct{}                    // closed once journaled and registered (or given up)
}

// topicChanges collects the topic table's changes for the registrar's
// change worker, which registers one batch at a time: changes made while a
// batch is on its way form the next one, so a burst of creations costs a
// few registrations, not one each. It also holds the answers of requests
// that must wait for a batch.
type topicChanges struct {
	mu      sync.Mutex
	open    *routeBatch // collecting; taken by the worker
	seq     uint64
	pending map[string]*routeBatch // topic -> the newest batch carrying it, until done
	npend   atomic.Int32           // len(pending), read without the lock on the send path
	work    chan struct{}

	// holds is a plain map, not a sync.Map: a sync.Map keeps deleted
	// keys (here every held request, header and all) until it rebuilds.
	hmu    sync.Mutex
	holds  map[*remoting.Command]*routeBatch
	nholds atomic.Int64

	failed atomic.Uint64 // batches some name server did not acknowledge
}

// topicChanged records a change of the topic table: tc created or updated,
// or deleted named (tc nil); v is the table's data version right after it.
func (r *registrar) topicChanged(tc *metadata.TopicConfig, deleted string, v metadata.DataVersion) {
	ch := &r.changes
	ch.mu.Lock()
	b := ch.open
	if b == nil {
		ch.seq++
		b = &routeBatch{seq: ch.seq, topics: map[string]*metadata.TopicConfig{}, at: map[string]int64{},
			done: make(chan struct{}), version: v}
		ch.open = b
	}
	name := deleted
	if tc != nil {
		name = tc.TopicName
	}
	// Two changes of one topic may come in out of order: the newer wins.
	if at, ok := b.at[name]; !ok || v.Counter > at {
		b.at[name] = v.Counter
		if tc != nil {
			b.topics[name] = tc
		} else {
			delete(b.topics, name)
		}
	}
	if tc == nil {
		b.full = true
	}
	b.names = append(b.names, name)
	b.changes = append(b.changes, metadata.TopicChange{DataVersion: v, TopicConfig: tc, Deleted: deleted})
	if v.Counter > b.version.Counter {
		b.version = v
	}
	ch.pending[name] = b
	ch.npend.Store(int32(len(ch.pending)))
	ch.mu.Unlock()
	select {
	case ch.work <- struct{}{}:
	default:
	}
}

// pendingBatch returns the batch still registering topic, or nil.
func (ch *topicChanges) pendingBatch(topic string) *routeBatch {
	if ch.npend.Load() == 0 {
		return nil
	}
	ch.mu.Lock()
	b := ch.pending[topic]
	ch.mu.Unlock()
	return b
}

// take returns the open batch and starts a new one.
func (ch *topicChanges) take() *routeBatch {
	ch.mu.Lock()
	b := ch.open
	ch.open = nil
	ch.mu.Unlock()
	return b
}

// finish releases b's waiters.
func (ch *topicChanges) finish(b *routeBatch) {
	ch.mu.Lock()
	for _, n := range b.names {
		if ch.pending[n] == b {
			delete(ch.pending, n)
		}
	}
	ch.npend.Store(int32(len(ch.pending)))
	ch.mu.Unlock()
	close(b.done)
}

// runTopicChanges registers the batches of topic changes until the broker
// stops; the batches left then are released unregistered (the shutdown
// unregisters the broker anyway).
func (r *registrar) runTopicChanges() {
	for {
		select {
		case <-r.b.stop:
			if b := r.changes.take(); b != nil {
				r.changes.finish(b)
			}
			return
		case <-r.changes.work:
		}
		if b := r.changes.take(); b != nil {
			r.applyBatch(b)
		}
	}
}

// applyBatch makes b's changes durable in the topic journal, registers
// them with every name server (bounded by registerBrokerTimeoutMills; a
// name server that fails or does not answer in time is logged), then
// releases the requests waiting for it. When the journal cannot be
// written, the requests wait for the next write of topics.json instead.
func (r *registrar) applyBatch(b *routeBatch) {
	var written <-chan struct{}
	if err := r.b.topics.Journal.Append(b.changes); err != nil {
		r.b.logger.Error("append topic journal; waiting for topics.json instead", "err", err)
		written = r.b.topics.File.DirtyWait()
	}
	ctx, cancel := context.WithTimeout(r.base, r.timeout())
	var err error
	if b.full {
		err = r.registerAll(ctx)
	} else {
		err = r.registerTopics(ctx, b.topics, b.version)
	}
	cancel()
	if err != nil {
		r.changes.failed.Add(1)
		r.b.logger.Warn("register topic changes", "topics", len(b.names), "err", err)
	}
	if written != nil {
		select {
		case <-written:
		case <-r.b.stop:
		}
	}
	r.changes.finish(b)
}

// holdRoute makes req's answer wait for the registration of topic when a
// change of that topic is still on its way to the name servers (it was
// created by this request or a moment before), so a client that gets the
// answer finds the topic's route. Call it before the answer is sent.
func (b *Broker) holdRoute(req *remoting.Command, topic string) {
	ch := &b.registrar.changes
	batch := ch.pendingBatch(topic)
	if batch == nil {
		return
	}
	// Batches finish in seq order, so the newest one a request waits
	// for is the last to finish: keep that.
	ch.hmu.Lock()
	defer ch.hmu.Unlock()
	if prev, ok := ch.holds[req]; ok {
		if prev.seq < batch.seq {
			ch.holds[req] = batch
		}
		return
	}
	if ch.holds == nil {
		ch.holds = make(map[*remoting.Command]*routeBatch)
	}
	ch.holds[req] = batch
	ch.nholds.Add(1)
}

// takeHold removes and returns the batch req waits for, or nil.
func (ch *topicChanges) takeHold(req *remoting.Command) *routeBatch {
	if ch.nholds.Load() == 0 {
		return nil
	}
	ch.hmu.Lock()
	defer ch.hmu.Unlock()
	b, ok := ch.holds[req]
	if !ok {
		return nil
	}
	delete(ch.holds, req)
	ch.nholds.Add(-1)
	return b
}

// routeWait returns the channel closed once the batch req waits for is
// registered, or nil when req waits for none (or it is registered).
func (b *Broker) routeWait(req *remoting.Command) <-chan struct{} {
	batch := b.registrar.changes.takeHold(req)
	if batch == nil {
		return nil
	}
	select {
	case <-batch.done:
		return nil
	default:
	}
	return batch.done
}
