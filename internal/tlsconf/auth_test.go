package tlsconf

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/spoolmq/spool/internal/clock"
)

func TestAuthDeadline(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	ln, accepted := listen(t, ListenerConfig{AuthDeadline: 30 * time.Second, Clock: clk})
	late := dial(t, ln)
	ok := dial(t, ln)
	aLate, aOK := <-accepted, <-accepted
	defer aOK.Close()
	// The watch of each connection waits on the clock from Accept on.
	if n := clk.Waiters(); n != 2 {
		t.Fatalf("%d waits on the clock", n)
	}
	if !ln.MarkAuthenticated(aOK.RemoteAddr()) {
		t.Fatal("the open connection was not found")
	}
	if !aOK.(*Conn).Authenticated() || aLate.(*Conn).Authenticated() {
		t.Fatal("marked the wrong connection")
	}
	clk.Advance(30 * time.Second)
	if !closedByPeer(t, late) {
		t.Fatal("the unauthenticated connection stayed open")
	}
	if _, err := aOK.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if closedByPeer(t, ok) {
		t.Fatal("the authenticated connection was closed")
	}
	if st := ln.Stats(); st.Refused[AuthDeadline] != 1 || st.Open != 1 {
		t.Fatalf("stats %+v", st)
	}
	if ln.MarkAuthenticated(&net.TCPAddr{IP: net.IPv4(10, 9, 9, 9), Port: 1}) {
		t.Fatal("marked a connection that does not exist")
	}
}

// The official Go client, with WithTls, talks to a transport Server
// behind an enforcing listener (RocketMQ's test-mode certificate: the Go
// client does not verify the server) and gets its answer.
func TestGoClientWithTLS(t *testing.T) {
	rlog.SetLogLevel("fatal")
	cfg, err := Parse(map[string]string{KeyConfigFile: "", KeyServerMode: "enforcing"})
	if err != nil {
		t.Fatal(err)
	}
	ln, addr := startTransport(t, ListenerConfig{Mode: cfg.Mode, TLS: serverTLS(t, cfg)})
	for _, useTLS := range []bool{true, false} {
		adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{addr})),
			admin.WithTls(useTLS))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := adm.FetchAllTopicList(ctx)
		cancel()
		adm.Close()
		if useTLS && (err != nil || len(list.TopicList) != 1 || list.TopicList[0] != "TopicA") {
			t.Fatalf("with TLS: %+v %v", list, err)
		}
		if !useTLS && err == nil {
			t.Fatal("a plain Go client was answered on an enforcing port")
		}
	}
	if st := ln.Stats(); st.TLS == 0 || st.Refused[PlainRefused] == 0 {
		t.Fatalf("stats %+v", st)
	}
}
