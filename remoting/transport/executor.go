package transport

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/remoting"
)

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	// Name names the executor in logs and figures, e.g. "send".
	Name string
	// Workers is how many requests run at once (default 1).
	Workers int
	// QueueCapacity bounds the requests waiting for a worker (default
	// 10000, RocketMQ's sendThreadPoolQueueCapacity).
	QueueCapacity int
	// MaxQueueWait answers a request that waited longer with SYSTEM_BUSY
	// [TIMEOUT_CLEAN_QUEUE] without running it; 0 = no limit. The wait
	// includes the time the connection's reader was paused by the server's
	// body budget before it read the request.
	MaxQueueWait time.Duration
	// Reject, when set, is asked before a request is run or queued; a
	// non-empty remark answers the request SYSTEM_BUSY with that remark at
	// once (RocketMQ's rejectRequest: [REJECTREQUEST]). It runs on the
	// connection's reader and must be cheap.
	Reject func(req *remoting.Command) string
}

// Executor is an admission bound for one kind of request: at most Workers
// requests run at once (and one more on each event loop) and at most
// QueueCapacity wait. It is not a
// mandatory hop: a request runs inline on the connection's reader goroutine
// when a worker slot is free, nothing is queued and the connection has no
// further request already buffered (a pipelining connection hands its
// requests to the workers, so they run in parallel instead of one after
// another on its reader). An event loop runs a request of a code declared
// with Server.RunsOnLoop whenever nothing is queued before it, taking back
// first what it may run of the queue's head (takeBack).
type Executor struct {
	cfg ExecutorConfig

	mu     sync.Mutex
	cond   sync.Cond
	busy   int // slots in use, inline runs included
	q      taskQueue
	closed bool
	timer  *time.Timer

	budget *bodyBudget // the server's; nil for none

	inline, queued, overload, timedOut atomic.Uint64
	rejected, drained, resumed         atomic.Uint64
	takenBack                          atomic.Uint64
	wg                                 sync.WaitGroup
}

// ExecutorStats are an executor's counters since it started.
type ExecutorStats struct {
	Inline   uint64 // requests run inline on a reader goroutine
	Queued   uint64 // requests queued for a worker
	Overload uint64 // requests refused because the queue was full
	TimedOut uint64 // requests answered [TIMEOUT_CLEAN_QUEUE]
	Rejected uint64 // requests refused by ExecutorConfig.Reject
	Drained  uint64 // queued requests answered by Drain
	Resumed  uint64 // held requests queued again by Resume
	// TakenBack counts queued requests an event loop ran itself (see
	// Executor.takeBack); they are counted in Queued too.
	TakenBack uint64
}

// task is a queued request, or a held request resumed (r and resume set).
type task struct {
	c      *Conn
	req    *remoting.Command
	h      ReplyHandler
	enq    time.Time
	r      *Responder
	resume func(*Responder)
	// loop is the event loop that may run the request itself (its
	// connection's, for a code declared with Server.RunsOnLoop); nil for
	// a resumed request, which only a worker runs.
	loop *eventLoop
}

// loopTakeBack is how many queued requests a loop's request takes back
// at most (Executor.takeBack): enough to empty a queue its clients keep
// filling, few enough to keep a frame's dispatch short.
const loopTakeBack = 32

func newExecutor(cfg ExecutorConfig, budget *bodyBudget) *Executor {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = 10000
	}
	e := &Executor{cfg: cfg, budget: budget}
	e.cond.L = &e.mu
	if cfg.MaxQueueWait > 0 {
		e.timer = time.AfterFunc(time.Hour, e.cleanExpired)
		e.timer.Stop()
	}
	e.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go e.worker()
	}
	return e
}

// Name returns the executor's name.
func (e *Executor) Name() string { return e.cfg.Name }

// QueueLen returns the number of queued requests.
func (e *Executor) QueueLen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.q.len()
}

// HeadWait returns how long the oldest queued request has waited (0 when
// nothing is queued).
func (e *Executor) HeadWait() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.q.len() == 0 {
		return 0
	}
	return time.Since(e.q.peek().enq)
}

// Stats returns the executor's counters.
func (e *Executor) Stats() ExecutorStats {
	return ExecutorStats{Inline: e.inline.Load(), Queued: e.queued.Load(),
		Overload: e.overload.Load(), TimedOut: e.timedOut.Load(), Rejected: e.rejected.Load(), Drained: e.drained.Load(),
		Resumed: e.resumed.Load(), TakenBack: e.takenBack.Load()}
}

// submit runs, queues or refuses a request that holds an in-flight slot;
// mayInline says it may run on the calling reader (an event loop only for
// codes declared with Server.RunsOnLoop), loop is the event loop that may
// run it (its connection's, for such a code) even when it is queued.
func (e *Executor) submit(c *Conn, req *remoting.Command, h ReplyHandler, mayInline bool, loop *eventLoop) {
	if e.cfg.Reject != nil {
		if remark := e.cfg.Reject(req); remark != "" {
			e.rejected.Add(1)
			c.reject(req, remoting.SystemBusy, remark, true)
			return
		}
	}
	// A request read after a body-budget pause arrived when the pause
	// began: the pause is queue wait.
	enq := c.arrived // zero unless the request waited for a body-budget pause
	if !enq.IsZero() {
		if wait := time.Since(enq); e.cfg.MaxQueueWait > 0 && wait > e.cfg.MaxQueueWait {
			e.rejectTimeout(task{c: c, req: req}, wait, e.QueueLen(), true)
			return
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		c.reject(req, remoting.SystemBusy, "[REJECTREQUEST]system busy, server is shutting down", true)
		return
	}
	if mayInline && loop != nil && e.q.len() > 0 {
		e.takeBack(c.lp.run)
	}
	// An event loop runs what it may with nothing queued before it, also
	// when the workers are all busy (with what it could not take back).
	if mayInline && e.q.len() == 0 && (e.busy < e.cfg.Workers && !c.pipelined || c.lp != nil) {
		e.busy++
		e.mu.Unlock()
		e.inline.Add(1)
		if c.lp != nil {
			c.lp.inline.Store(req)
			c.run(h, req, true)
			c.lp.inline.Store(nil)
		} else {
			c.run(h, req, true)
		}
		e.release()
		return
	}
	// Requests about to be taken by idle workers (a pipelining connection
	// queues even when slots are free) do not count against the capacity.
	if n := e.q.len(); n >= e.cfg.QueueCapacity+max(0, e.cfg.Workers-e.busy-n) {
		e.mu.Unlock()
		e.overload.Add(1)
		c.reject(req, remoting.SystemBusy, fmt.Sprintf(
			"[OVERLOAD]system busy, start flow control for a while, queue size: %d, capacity: %d",
			n, e.cfg.QueueCapacity), true)
		return
	}
	if enq.IsZero() {
		enq = time.Now() // read only for a queued request: one run inline never waits
	}
	c.ownBody(req) // a worker runs it after the loop has read on
	// Counted before a worker can take it: once its answer is out, the
	// figures include it.
	e.queued.Add(1)
	e.q.push(task{c: c, req: req, h: h, enq: enq, loop: loop})
	e.budget.add(len(req.Body))
	if e.q.len() == 1 && e.timer != nil {
		e.timer.Reset(e.cfg.MaxQueueWait + time.Millisecond)
	}
	e.cond.Signal()
	e.mu.Unlock()
}

// takeBack runs on r's loop, first in first out, queued requests that
// loop may run itself, up to loopTakeBack of them and until the queue's
// head is one it may not (a resumed request, another loop's). It is
// called, with e.mu held, for a request the loop would run inline but
// for requests queued before it: those a displaced run's stall sent to
// the workers (Server.RunsOnLoop's codes go to the workers while a loop
// is held), or that found every worker busy. Without it a loop's clients
// that keep their windows full keep the queue from ever emptying: each
// request queues behind the last, and the workers run them all, more
// slowly than the loop (a worker's answer is a write of its own, and its
// put is not grouped with a pass's), until the waits pass MaxQueueWait.
// A request taken back holds a slot while it runs, over Workers if need
// be: the loop is a runner of its own, and the workers take up the queue
// again when it is done.
func (e *Executor) takeBack(r *loopRun) {
	for n := 0; n < loopTakeBack && e.q.len() > 0 && !r.displaced.Load(); n++ {
		if e.q.peek().loop != r.l {
			break
		}
		if t, ok := e.takeHead(); ok {
			e.takenBack.Add(1)
			r.runTaken(t.c, t.h, t.req)
		}
		e.mu.Lock()
		e.busy--
	}
	if e.q.len() > 0 {
		e.cond.Signal()
	}
}

// Resume queues run(r) for a deferred request whose handler returned
// (a held pull woken up): it runs on a worker, within the executor's
// bounds, and must complete r. It never runs on the caller, which may be a
// timer or the store's dispatcher. The request keeps the in-flight slot it
// holds; when the executor refuses it (closed, queue full, waited longer
// than MaxQueueWait, Drain) r is completed with the SYSTEM_BUSY answer a
// new request would get.
func (e *Executor) Resume(r *Responder, run func(*Responder)) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		r.Reply(remoting.NewResponse(r.req, remoting.SystemBusy, "[REJECTREQUEST]system busy, server is shutting down"))
		return
	}
	if n := e.q.len(); n >= e.cfg.QueueCapacity+max(0, e.cfg.Workers-e.busy-n) {
		e.mu.Unlock()
		e.overload.Add(1)
		r.Reply(remoting.NewResponse(r.req, remoting.SystemBusy, fmt.Sprintf(
			"[OVERLOAD]system busy, start flow control for a while, queue size: %d, capacity: %d",
			n, e.cfg.QueueCapacity)))
		return
	}
	e.resumed.Add(1) // before a worker can take it, as for submit
	e.q.push(task{c: r.c, req: r.req, enq: time.Now(), r: r, resume: run})
	e.budget.add(len(r.req.Body))
	if e.q.len() == 1 && e.timer != nil {
		e.timer.Reset(e.cfg.MaxQueueWait + time.Millisecond)
	}
	e.cond.Signal()
	e.mu.Unlock()
}

// refuse answers t SYSTEM_BUSY without running it.
func (e *Executor) refuse(t task, remark string, onReader bool) {
	if t.r != nil {
		t.r.Reply(remoting.NewResponse(t.req, remoting.SystemBusy, remark))
		return
	}
	t.c.reject(t.req, remoting.SystemBusy, remark, onReader)
}

// runTask runs a queued task on a worker.
func (e *Executor) runTask(t task) {
	if t.r == nil {
		t.c.run(t.h, t.req, false)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(contractError); ok {
				panic(p)
			}
			if t.c.cfg.logger != nil {
				t.c.cfg.logger.Error("remoting: resumed handler panic", "code", t.req.Code, "conn", t.c.cfg.id,
					"panic", fmt.Sprint(p))
			}
			if !t.r.once.Load() {
				t.r.Reply(remoting.NewResponse(t.req, remoting.SystemError, fmt.Sprintf("handler panic: %v", p)))
			}
		}
	}()
	t.resume(t.r)
}

// release gives back a worker slot and wakes a worker when work waits.
func (e *Executor) release() {
	e.mu.Lock()
	e.busy--
	if e.q.len() > 0 {
		e.cond.Signal()
	}
	e.mu.Unlock()
}

func (e *Executor) worker() {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		for !e.closed && (e.q.len() == 0 || e.busy >= e.cfg.Workers) {
			e.cond.Wait()
		}
		if e.closed {
			e.mu.Unlock()
			return
		}
		if t, ok := e.takeHead(); ok {
			e.runTask(t)
		}
		e.release()
	}
}

// takeHead takes the queue's head for the caller to run, holding a slot
// (the caller gives it back); it is called with e.mu held and returns with
// it released. A request that waited longer than MaxQueueWait is answered
// busy instead (ok false).
func (e *Executor) takeHead() (t task, ok bool) {
	t = e.q.pop()
	size := e.q.len()
	e.busy++
	e.mu.Unlock()
	e.budget.release(len(t.req.Body))
	if wait := time.Since(t.enq); e.cfg.MaxQueueWait > 0 && wait > e.cfg.MaxQueueWait {
		e.rejectTimeout(t, wait, size, false)
		return t, false
	}
	return t, true
}

func (e *Executor) rejectTimeout(t task, wait time.Duration, size int, onReader bool) {
	e.timedOut.Add(1)
	e.refuse(t, fmt.Sprintf(
		"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d, limit: %dms",
		wait.Milliseconds(), size, e.cfg.MaxQueueWait.Milliseconds()), onReader)
}

// Drain answers every queued request SYSTEM_BUSY at once, with the remark
// remark makes from the request's wait and the number of requests still
// queued behind it, and returns how many it answered. The broker drains
// its send queue this way while the store's page cache is busy
// ([PCBUSY_CLEAN_QUEUE]); requests already running are not touched.
func (e *Executor) Drain(remark func(wait time.Duration, left int) string) int {
	e.mu.Lock()
	var tasks []task
	for e.q.len() > 0 {
		tasks = append(tasks, e.q.pop())
	}
	e.mu.Unlock()
	now := time.Now()
	for i, t := range tasks {
		e.budget.release(len(t.req.Body))
		e.drained.Add(1)
		e.refuse(t, remark(now.Sub(t.enq), len(tasks)-i-1), false)
	}
	return len(tasks)
}

// cleanExpired answers every queued request that has waited longer than
// MaxQueueWait, so that a stalled executor fails fast instead of letting
// clients time out; it re-arms itself for the new head.
func (e *Executor) cleanExpired() {
	now := time.Now()
	var expired []task
	e.mu.Lock()
	for e.q.len() > 0 && now.Sub(e.q.peek().enq) > e.cfg.MaxQueueWait {
		t := e.q.pop()
		e.budget.release(len(t.req.Body))
		expired = append(expired, t)
	}
	size := e.q.len()
	if size > 0 && !e.closed {
		e.timer.Reset(e.q.peek().enq.Add(e.cfg.MaxQueueWait).Sub(now) + time.Millisecond)
	}
	e.mu.Unlock()
	for _, t := range expired {
		e.rejectTimeout(t, now.Sub(t.enq), size, false)
	}
}

// close stops the workers; queued requests are dropped (their connections
// are closing).
func (e *Executor) close() {
	e.mu.Lock()
	e.closed = true
	for e.q.len() > 0 {
		e.budget.release(len(e.q.pop().req.Body))
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	e.wg.Wait()
}

// taskQueue is a FIFO ring that grows as needed.
type taskQueue struct {
	buf        []task
	head, size int
}

func (q *taskQueue) len() int { return q.size }

func (q *taskQueue) peek() *task { return &q.buf[q.head] }

func (q *taskQueue) push(t task) {
	if q.size == len(q.buf) {
		n := max(16, 2*len(q.buf))
		buf := make([]task, n)
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = t
	q.size++
}

func (q *taskQueue) pop() task {
	t := q.buf[q.head]
	q.buf[q.head] = task{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return t
}
