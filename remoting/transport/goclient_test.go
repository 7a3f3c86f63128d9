package transport

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/spoolmq/spool/remoting"
)

// The official Go client talks to the transport: its JSON requests decode,
// and our responses decode on its side.
func TestGoClientInterop(t *testing.T) {
	rlog.SetLogLevel("fatal")
	var mu sync.Mutex
	var seen []*remoting.Command
	record := func(req *remoting.Command) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
	}
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(remoting.GetAllTopicListFromNameserver, func(c *Conn, req *remoting.Command) *remoting.Command {
			record(req)
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = []byte(`{"topicList":["TopicA","%RETRY%g"]}`)
			return resp
		}, nil)
		for _, code := range []int32{remoting.DeleteTopicInBroker, remoting.DeleteTopicInNamesrv} {
			s.Register(code, func(c *Conn, req *remoting.Command) *remoting.Command {
				record(req)
				return remoting.NewResponse(req, remoting.Success, "")
			}, nil)
		}
	})
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{addr})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.TopicList) != 2 || list.TopicList[1] != "%RETRY%g" {
		t.Fatalf("topic list %+v", list)
	}
	err = adm.DeleteTopic(ctx, admin.WithTopicDelete("TopicA"), admin.WithBrokerAddrDelete(addr),
		admin.WithNameSrvAddr([]string{addr}))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d requests", len(seen))
	}
	for _, r := range seen {
		if r.Language != "GO" || r.Version != 317 || r.Serialize != remoting.SerializeJSON || r.IsOneway() {
			t.Fatalf("request %+v", r)
		}
	}
	if seen[1].Code != remoting.DeleteTopicInBroker || seen[1].Ext("topic") != "TopicA" ||
		seen[2].Code != remoting.DeleteTopicInNamesrv || seen[2].Ext("topic") != "TopicA" {
		t.Fatalf("delete requests %+v %+v", seen[1], seen[2])
	}
}
