package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/message"
)

// testConfig is the Small shape of internal/testkit, which imports the
// store and so cannot be imported by its tests.
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.StorePathCommitLog = filepath.Join(cfg.StorePathRootDir, "commitlog")
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * CQEntrySize
	cfg.FlushIntervalCommitLog = 10
	cfg.FlushIntervalConsumeQueue = 20
	cfg.MaxHashSlotNum = 1000
	cfg.MaxIndexNum = 4000
	cfg.SyncFlushTimeout = 5000
	return cfg
}

func openStarted(t testing.TB, cfg Config, fs vfs.FS) *DefaultMessageStore {
	t.Helper()
	st, err := Open(cfg, fs, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := st.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return st
}

func testMsg(topic string, qid int32, body string, tags string) *message.Inner {
	props := map[string]string{}
	if tags != "" {
		props[message.PropertyTags] = tags
	}
	return &message.Inner{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: props,
		BornTimestamp: 1700000000000,
		BornHost:      message.Addr{IP: []byte{127, 0, 0, 1}, Port: 5000},
		StoreHost:     message.Addr{IP: []byte{127, 0, 0, 1}, Port: 10911},
	}
}

// putSync puts and waits for the completion.
func putSync(t testing.TB, st MessageStore, m *message.Inner) PutResult {
	t.Helper()
	ch := make(chan PutResult, 1)
	st.PutMessage(m, func(r PutResult) { ch <- r })
	return <-ch
}

func mustPut(t testing.TB, st MessageStore, m *message.Inner) PutResult {
	t.Helper()
	r := putSync(t, st, m)
	for i := 0; r.Status == OSPageCacheBusy && i < 100000; i++ {
		// The allocator or committer is behind (tiny test files): retry.
		runtime.Gosched()
		r = putSync(t, st, m)
	}
	if r.Status != PutOK {
		t.Fatalf("put: status %d remark %q", r.Status, r.Remark)
	}
	return r
}

// waitDispatched blocks until queue max offset reaches n.
func waitDispatched(t testing.TB, st *DefaultMessageStore, topic string, qid int32, n int64) {
	t.Helper()
	ch := make(chan struct{}, 1)
	st.OnDispatch(func(tp string, q int32, max int64) {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	for st.MaxOffsetInQueue(topic, qid) < n {
		st.commitLog.kickDispatch()
		<-ch
	}
}

func TestPutGetRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var offs []int64
	for i := 0; i < 1000; i++ { // ~150 B records: several files
		r := mustPut(t, st, testMsg("T", int32(i%2), fmt.Sprintf("body-%d", i), "A"))
		if want := int64(i / 2); r.QueueOffset != want {
			t.Fatalf("message %d: queue offset %d, want %d", i, r.QueueOffset, want)
		}
		offs = append(offs, r.WroteOffset)
	}
	waitDispatched(t, st, "T", 0, 500)
	waitDispatched(t, st, "T", 1, 500)
	if st.commitLog.mfq.count() < 2 {
		t.Fatalf("expected several CommitLog files, have %d", st.commitLog.mfq.count())
	}
	got := 0
	for off := int64(0); off < 500; {
		r := st.GetMessage("g", "T", 1, off, 32, 1<<20, nil)
		if r.Status != Found {
			t.Fatalf("offset %d: status %v", off, r.Status)
		}
		for i, rec := range r.Buffers {
			ext, err := message.DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			qo := r.QueueOffsets[i]
			if want := fmt.Sprintf("body-%d", qo*2+1); string(ext.Body) != want {
				t.Fatalf("queue offset %d: body %q want %q", qo, ext.Body, want)
			}
			if ext.QueueOffset != qo || ext.PhysicalOffset != offs[qo*2+1] {
				t.Fatalf("queue offset %d: record says qo %d phy %d", qo, ext.QueueOffset, ext.PhysicalOffset)
			}
			got++
		}
		off = r.NextBeginOffset
		r.Release()
	}
	if got != 500 {
		t.Fatalf("read %d messages", got)
	}
	rec, err := st.LookMessageByOffset(offs[7])
	if err != nil {
		t.Fatal(err)
	}
	if ext, _ := message.DecodeRecord(rec); string(ext.Body) != "body-7" {
		t.Fatalf("look: %q", ext.Body)
	}
	if _, err := st.LookMessageByOffset(offs[7] + 1); err == nil {
		t.Fatal("look at a non-record offset succeeded")
	}
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchTagsCode(c int64) bool { return c == f.code }
func (f tagFilter) MatchRecord([]byte) bool    { return true }

func TestGetMessageStatuses(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if r := st.GetMessage("g", "none", 0, 0, 32, 0, nil); r.Status != NoMatchedLogicQueue {
		t.Fatalf("missing queue: %v", r.Status)
	}
	for i := 0; i < 10; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		mustPut(t, st, testMsg("S", 0, fmt.Sprint(i), tag))
	}
	waitDispatched(t, st, "S", 0, 10)
	cases := []struct {
		off    int64
		status GetStatus
		next   int64
	}{
		{10, OffsetOverflowOne, 10},
		{11, OffsetOverflowBadly, 10},
		{0, Found, 10},
	}
	for _, c := range cases {
		r := st.GetMessage("g", "S", 0, c.off, 32, 0, nil)
		if r.Status != c.status || r.NextBeginOffset != c.next {
			t.Fatalf("offset %d: %v next %d, want %v next %d", c.off, r.Status, r.NextBeginOffset, c.status, c.next)
		}
		r.Release()
	}
	r := st.GetMessage("g", "S", 0, 0, 32, 0, tagFilter{message.TagsHashCode("B")})
	if r.Status != Found || len(r.Buffers) != 5 || r.QueueOffsets[0] != 1 {
		t.Fatalf("tag filter: %v %d", r.Status, len(r.Buffers))
	}
	r.Release()
	r = st.GetMessage("g", "S", 0, 0, 32, 0, tagFilter{message.TagsHashCode("C")})
	if r.Status != NoMatchedMessage || r.NextBeginOffset != 10 {
		t.Fatalf("no match: %v next %d", r.Status, r.NextBeginOffset)
	}
	r = st.GetMessage("g", "S", 0, 0, 3, 0, nil)
	if len(r.Buffers) != 3 || r.NextBeginOffset != 3 {
		t.Fatalf("maxMsgNums: %d next %d", len(r.Buffers), r.NextBeginOffset)
	}
	r.Release()
	// An empty queue that exists: a queue whose only message is a
	// prepared transaction part has no entries at all, so use a fresh one
	// via the batch path.
	if got := st.MinOffsetInQueue("S", 0); got != 0 {
		t.Fatalf("min %d", got)
	}
}

func TestOffsetByTime(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	for i := 0; i < 20; i++ {
		m := testMsg("TT", 0, "x", "")
		m.StoreTimestamp = int64(1000 + 10*i)
		mustPut(t, st, m)
	}
	waitDispatched(t, st, "TT", 0, 20)
	for _, c := range []struct{ ts, want int64 }{{0, 0}, {1000, 0}, {1001, 1}, {1050, 5}, {1190, 19}, {5000, 20}} {
		if got := st.OffsetInQueueByTime("TT", 0, c.ts); got != c.want {
			t.Errorf("ts %d: offset %d, want %d", c.ts, got, c.want)
		}
	}
	if got := st.MessageStoreTimeStamp("TT", 0, 3); got != 1030 {
		t.Errorf("store time %d", got)
	}
	if got := st.EarliestMessageTime("TT", 0); got != 1000 {
		t.Errorf("earliest %d", got)
	}
}

func TestBatchPut(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	mustPut(t, st, testMsg("B", 0, "first", ""))
	b := &message.Batch{Topic: "B", QueueID: 0, BornHost: message.Addr{IP: []byte{1, 2, 3, 4}, Port: 1},
		StoreHost: message.Addr{IP: []byte{1, 2, 3, 5}, Port: 2}}
	for i := 0; i < 5; i++ {
		b.Members = append(b.Members, message.BatchMember{Body: []byte(fmt.Sprint("m", i)), PropertiesString: "TAGS\x01X\x02"})
	}
	ch := make(chan PutResult, 1)
	st.PutMessages(b, func(r PutResult) { ch <- r })
	r := <-ch
	if r.Status != PutOK || r.QueueOffset != 1 || r.MsgNum != 5 || len(r.Offsets) != 5 || r.Offsets[0] != r.WroteOffset {
		t.Fatalf("batch: %+v", r)
	}
	waitDispatched(t, st, "B", 0, 6)
	g := st.GetMessage("g", "B", 0, 1, 32, 0, nil)
	defer g.Release()
	if len(g.Buffers) != 5 {
		t.Fatalf("got %d", len(g.Buffers))
	}
	for i, rec := range g.Buffers {
		ext, _ := message.DecodeRecord(rec)
		if string(ext.Body) != fmt.Sprint("m", i) || ext.PhysicalOffset != r.Offsets[i] {
			t.Fatalf("member %d: %q at %d", i, ext.Body, ext.PhysicalOffset)
		}
	}
}

func TestPutLimits(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxMessageSize = 1000
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	r := putSync(t, st, testMsg("L", 0, string(make([]byte, 1001)), ""))
	if r.Status != MessageIllegal {
		t.Fatalf("oversize: %v", r.Status)
	}
	m := testMsg("L", 0, "x", "")
	m.Properties["big"] = string(bytes.Repeat([]byte("v"), 40000))
	if r := putSync(t, st, m); r.Status != PropertiesSizeExceeded {
		t.Fatalf("properties: %v %s", r.Status, r.Remark)
	}
}

func TestRestartNormal(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	for i := 0; i < 700; i++ {
		mustPut(t, st, testMsg("R", 0, fmt.Sprint(i), ""))
	}
	end := st.MaxPhyOffset()
	if err := st.Shutdown(); err != nil {
		t.Fatal(err)
	}
	st = openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if st.MaxPhyOffset() != end || st.MaxOffsetInQueue("R", 0) != 700 {
		t.Fatalf("after restart: end %d (want %d), queue max %d", st.MaxPhyOffset(), end, st.MaxOffsetInQueue("R", 0))
	}
	r := mustPut(t, st, testMsg("R", 0, "after", ""))
	if r.QueueOffset != 700 || r.WroteOffset != end {
		t.Fatalf("put after restart: %+v", r)
	}
}

func TestSecondOpenRefused(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	if _, err := Open(cfg, vfs.OS(), nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
}

func TestSyncFlushConcurrent(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r := putSync(t, st, testMsg("Y", int32(g), "sync-body", ""))
				if r.Status != PutOK {
					t.Errorf("status %d %s", r.Status, r.Remark)
					return
				}
				if st.commitLog.flushedWhere.Load() < r.WroteOffset+int64(r.WroteBytes) {
					t.Errorf("acknowledged before flush covered it")
				}
			}
		}()
	}
	wg.Wait()
	if s := st.Stats(); s.Flushes == 0 || s.Flushes >= 800 {
		t.Logf("flushes: %d for 800 puts", s.Flushes)
	}
}

func TestQueryMessageByKey(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var want int64
	for i := 0; i < 300; i++ {
		m := testMsg("Q", 0, fmt.Sprint("q", i), "")
		m.Properties[message.PropertyKeys] = fmt.Sprintf(" order-%d  shared", i) // empty parts are skipped
		m.Properties[message.PropertyUniqClientMessageIDKeyIdx] = fmt.Sprintf("UNIQ%04d", i)
		r := mustPut(t, st, m)
		if i == 123 {
			want = r.WroteOffset
		}
	}
	for st.index.cursor.Load() < st.MaxPhyOffset() {
		st.index.kick()
		runtimeGosched()
	}
	for _, key := range []string{"order-123", "UNIQ0123"} {
		r, err := st.QueryMessage("Q", key, 32, 0, 1<<62)
		if err != nil || len(r.Records) != 1 {
			t.Fatalf("%s: %v, %d records", key, err, len(r.Records))
		}
		ext, _ := message.DecodeRecord(r.Records[0])
		if ext.PhysicalOffset != want || string(ext.Body) != "q123" {
			t.Fatalf("%s: found %q at %d", key, ext.Body, ext.PhysicalOffset)
		}
	}
	r, err := st.QueryMessage("Q", "shared", 500, 0, 1<<62)
	if err != nil || len(r.Records) != 64 {
		t.Fatalf("shared key: %v, %d records (want the 64 batch limit)", err, len(r.Records))
	}
	if r, _ := st.QueryMessage("Other", "order-1", 32, 0, 1<<62); len(r.Records) != 0 {
		t.Fatal("found a record of another topic")
	}
}

func runtimeGosched() { runtime.Gosched() }

func TestEvictPageCache(t *testing.T) {
	for _, wp := range writePaths[:2] {
		t.Run(wp.name, func(t *testing.T) {
			cfg := testConfig(t)
			wp.set(&cfg)
			cfg.FlushIntervalCommitLog = 1 << 30 // flushed explicitly below
			st := openStarted(t, cfg, vfs.OS())
			defer st.Shutdown()
			for i := 0; i < 1500; i++ {
				topic := "EvA"
				if i%2 == 1 {
					topic = "EvB"
				}
				mustPut(t, st, testMsg(topic, 0, strings.Repeat("e", 300), ""))
			}
			waitDispatched(t, st, "EvA", 0, 750)
			if err := st.commitLog.flusher.flushToNow(st.commitLog.visible.Load()); err != nil {
				t.Fatal(err)
			}
			r, err := st.EvictPageCache("EvA")
			if err != nil {
				t.Fatal(err)
			}
			if r.Files == 0 || r.Bytes == 0 || r.ResidentBefore == 0 || r.ResidentAfter >= r.ResidentBefore {
				t.Fatalf("topic eviction: %+v", r)
			}
			r, err = st.EvictPageCache("")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: all: %+v", wp.name, r)
			if r.Files < 2 || r.ResidentAfter > r.ResidentBefore {
				t.Fatalf("eviction: %+v", r)
			}
			// Still readable after eviction (from disk).
			g := st.GetMessage("g", "EvB", 0, 0, 8, 0, nil)
			if g.Status != Found {
				t.Fatalf("read after eviction: %v", g.Status)
			}
			g.Release()
		})
	}
}

func TestLargeRecordsDispatchAndIndex(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeCommitLog = 8 << 20
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	var want int64
	for i := 0; i < 3; i++ {
		m := testMsg("Big", 0, strings.Repeat("B", 3<<20), "")
		m.Properties[message.PropertyKeys] = fmt.Sprint("big-", i)
		r := mustPut(t, st, m)
		if i == 2 {
			want = r.WroteOffset
		}
	}
	waitDispatched(t, st, "Big", 0, 3)
	for st.index.cursor.Load() < st.MaxPhyOffset() {
		st.index.kick()
		runtimeGosched()
	}
	r, err := st.QueryMessage("Big", "big-2", 4, 0, 1<<62)
	if err != nil || len(r.Records) != 1 {
		t.Fatalf("query: %v %d", err, len(r.Records))
	}
	if ext, _ := message.DecodeRecord(r.Records[0]); ext.PhysicalOffset != want || len(ext.Body) != 3<<20 {
		t.Fatalf("wrong record")
	}
	g := st.GetMessage("g", "Big", 0, 0, 32, 0, nil)
	defer g.Release()
	if g.Status != Found || len(g.Buffers) != 1 { // the first message always, then the transfer limit
		t.Fatalf("get: %v %d", g.Status, len(g.Buffers))
	}
}

func TestPlanReads(t *testing.T) {
	const file = 1 << 20
	pk := func(phy int64, size int) pick { return pick{phy: phy, size: size} }
	cases := []struct {
		name  string
		picks []pick
		want  []readSpan
		total int
	}{
		{"adjacent", []pick{pk(0, 100), pk(100, 50), pk(150, 10)}, []readSpan{{0, 3}}, 160},
		{"small gaps join", []pick{pk(0, 100), pk(300, 100), pk(300+100+readGapMax, 1)}, []readSpan{{0, 3}}, 400 + readGapMax + 1},
		{"large gap splits", []pick{pk(0, 100), pk(100+readGapMax+1, 100)}, []readSpan{{0, 1}, {1, 2}}, 200},
		{"file end splits", []pick{pk(file-100, 100), pk(file, 100)}, []readSpan{{0, 1}, {1, 2}}, 200},
		{"span cap splits", []pick{pk(0, readSpanMax-10), pk(readSpanMax-10, 20)}, []readSpan{{0, 1}, {1, 2}}, readSpanMax + 10},
		{"out of order splits", []pick{pk(500, 100), pk(0, 100)}, []readSpan{{0, 1}, {1, 2}}, 200},
	}
	for _, tc := range cases {
		got, total := planReads(nil, tc.picks, file)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || total != tc.total {
			t.Errorf("%s: got %v %d, want %v %d", tc.name, got, total, tc.want, tc.total)
		}
	}
}

// TestGetMessageInterleavedQueues pulls queues whose records are
// interleaved (read with gap-joined preads) and checks every record.
func TestGetMessageInterleavedQueues(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	const queues, per = 3, 100
	for i := 0; i < per; i++ {
		for q := int32(0); q < queues; q++ {
			body := fmt.Sprintf("q%d-%d-%s", q, i, strings.Repeat("y", i*7))
			tag := "A"
			if i%5 == 0 {
				tag = "B"
			}
			mustPut(t, st, testMsg("IQ", q, body, tag))
		}
	}
	for q := int32(0); q < queues; q++ {
		waitDispatched(t, st, "IQ", q, per)
	}
	for q := int32(0); q < queues; q++ {
		for off := int64(0); off < per; {
			r := st.GetMessage("g", "IQ", q, off, 32, 0, nil)
			if r.Status != Found {
				t.Fatalf("q%d at %d: %v", q, off, r.Status)
			}
			for k, rec := range r.Buffers {
				ext, err := message.DecodeRecord(rec)
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("q%d-%d-%s", q, off+int64(k), strings.Repeat("y", int(off+int64(k))*7))
				if string(ext.Body) != want || r.QueueOffsets[k] != off+int64(k) {
					t.Fatalf("q%d at %d: got %q (offset %d)", q, off+int64(k), ext.Body, r.QueueOffsets[k])
				}
			}
			off = r.NextBeginOffset
			if q%2 == 1 {
				r.Recycle() // the next pull may read into the same result
			} else {
				r.Release()
			}
		}
	}
}

// TestRecycledResultComesBackEmpty: a recycled result's room goes back to
// the pool holding nothing of the pull it served (no status, offsets or
// record slices that would keep its read buffer alive).
func TestRecycledResultComesBackEmpty(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	for i := 0; i < 10; i++ {
		mustPut(t, st, testMsg("RC", 0, fmt.Sprint("m", i), ""))
	}
	waitDispatched(t, st, "RC", 0, 10)
	for attempt := 0; ; attempt++ {
		r := st.GetMessage("g", "RC", 0, 0, 32, 0, nil)
		if r.Status != Found || len(r.Buffers) != 10 || r.room == nil {
			t.Fatalf("%v, %d records, room %p", r.Status, len(r.Buffers), r.room)
		}
		room := r.room
		r.Recycle()
		got := resultRooms.Get().(*getResultRoom)
		if got != room {
			// The pool may drop an item (it does at random under the race
			// detector, and at a collection).
			if attempt == 100 {
				t.Fatal("the pool never gave a recycled room back")
			}
			continue
		}
		if got.r.Status != 0 || got.r.Buffers != nil || got.r.QueueOffsets != nil || got.r.readBuf != nil || got.r.NextBeginOffset != 0 || got.r.room != nil {
			t.Fatalf("recycled room holds %+v", got.r)
		}
		for k := range got.bufs {
			if got.bufs[k] != nil || got.qos[k] != 0 {
				t.Fatalf("recycled room keeps record %d", k)
			}
		}
		// A result without a room (nothing found) recycles as it releases.
		st.GetMessage("g", "RC", 0, 10, 32, 0, nil).Recycle()
		return
	}
}

// TestDispatchWakesWithoutKick checks that a put alone (no explicit kick)
// gets its records dispatched and OnDispatch run, many times over, so
// the parked-flag wake-up loses nothing.
func TestDispatchWakesWithoutKick(t *testing.T) {
	cfg := testConfig(t)
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	ch := make(chan int64, 1024)
	st.OnDispatch(func(tp string, q int32, max int64) {
		if tp == "W" {
			ch <- max
		}
	})
	for i := int64(1); i <= 200; i++ {
		mustPut(t, st, testMsg("W", 0, fmt.Sprint(i), ""))
		for got := int64(0); got < i; {
			got = <-ch
		}
	}
}

// TestPullReadsOnPastHoles: a pull without a filter reads the queue
// maxMsgNums entries at a time, and reads on while the entries it got were
// holes (records gone), within its queue file and maxFilterMessageSize, as
// a pull that reads that much at once does; with a filter it reads that
// much at once. Both find the same records.
func TestPullReadsOnPastHoles(t *testing.T) {
	cfg := testConfig(t) // consume-queue files of 100 entries
	st := openStarted(t, cfg, vfs.OS())
	defer st.Shutdown()
	mustPut(t, st, testMsg("HL", 0, "first", "a"))
	waitDispatched(t, st, "HL", 0, 1)
	// The next records get queue offsets 60..64: the dispatcher fills 1..59
	// with hole entries.
	st.commitLog.setQueueOffset(queueKey{"HL", 0}, 60)
	for i := 0; i < 5; i++ {
		mustPut(t, st, testMsg("HL", 0, fmt.Sprint("after-", i), "a"))
	}
	waitDispatched(t, st, "HL", 0, 65)
	for _, f := range []MessageFilter{nil, tagFilter{message.TagsHashCode("a")}} {
		for _, c := range []struct {
			max      int32
			n        int
			wantNext int64
		}{{32, 5, 65}, {2, 2, 62}} {
			r := st.GetMessage("g", "HL", 0, 1, c.max, 0, f)
			if r.Status != Found || len(r.Buffers) != c.n || r.NextBeginOffset != c.wantNext {
				t.Fatalf("filter %v, max %d: %v, %d records, next %d; want FOUND, %d, %d", f != nil, c.max, r.Status, len(r.Buffers), r.NextBeginOffset, c.n, c.wantNext)
			}
			for k, rec := range r.Buffers {
				ext, err := message.DecodeRecord(rec)
				if err != nil || string(ext.Body) != fmt.Sprint("after-", k) || r.QueueOffsets[k] != 60+int64(k) {
					t.Fatalf("filter %v, max %d, record %d: %v %q at %d", f != nil, c.max, k, err, ext.Body, r.QueueOffsets[k])
				}
			}
			r.Recycle()
		}
	}
}
