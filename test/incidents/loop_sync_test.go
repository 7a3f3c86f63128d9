package incidents

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// A CommitLog sync that sticks on the event loop that made it (the
// SYNC_FLUSH group commit of its pass, syncFlushOnEventLoop) holds no
// answer: the send it covers gets FLUSH_DISK_TIMEOUT after
// syncFlushTimeout while the sync is still stuck, another connection is
// served meanwhile (the watchdog gives the loop another goroutine), and
// sends succeed again once the disk answers.
func TestStuckLoopSyncHoldsNoAnswer(t *testing.T) {
	const topic = "LoopSyncTopic"
	fs := vfs.NewFaultFS(vfs.Default)
	fs.SkipRealSync(true) // syncs fast, so the loops make them
	var stuck atomic.Bool
	release := make(chan struct{})
	fs.SetHook(func(op vfs.Op, name string) {
		if op == vfs.OpSync && stuck.Load() && strings.Contains(name, "commitlog") {
			<-release
		}
	})
	r := startRig(t, rigOptions{fs: fs, store: func(c *store.Config) {
		c.MappedFileSizeCommitLog = 16 << 20
		c.FlushDiskType = store.SyncFlush
		c.SyncFlushTimeout = 300
	}})
	released := false
	unstick := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer unstick() // before the rig stops
	r.createTopic(topic, 1)
	send := func(body string) *remoting.Command {
		return r.call(r.addr(), sendRequest(topic, 0, []byte(body)))
	}
	for i := range 20 {
		if resp := send("warm"); resp.Code != remoting.Success {
			t.Fatalf("warm-up send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	if n := r.st.Stats().LoopFlushes; n == 0 {
		t.Fatal("20 sends with fast syncs, none synced by an event loop")
	}

	// Sends written together on one connection, so that one read and one
	// pass of more than one frame take them: the pass gathers its writes
	// and holds its answers until it has written them.
	stuck.Store(true)
	const together = 4
	conn, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var frames []byte
	for i := range together {
		req := sendRequest(topic, 0, []byte("stuck"))
		req.Opaque = int32(1000 + i)
		f, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f...)
	}
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	for i := range together {
		resp, err := remoting.ReadCommand(rd, 1<<20)
		if err != nil {
			t.Fatalf("%d of %d sends unanswered while their sync was stuck: %v", together-i, together, err)
		}
		if resp.Code != remoting.FlushDiskTimeout {
			t.Fatalf("send during the stuck sync: %d %s, want FLUSH_DISK_TIMEOUT", resp.Code, resp.Remark)
		}
	}
	other := transport.NewClient(transport.ClientConfig{DialTimeout: 10 * time.Second})
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	resp, err := other.Invoke(ctx, r.addr(), remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	cancel()
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("another connection during the stuck sync: %v %+v", err, resp)
	}

	unstick()
	for i := range 5 {
		if resp := send("after"); resp.Code != remoting.Success {
			t.Fatalf("send %d after the sync came back: %d %s", i, resp.Code, resp.Remark)
		}
	}
}
