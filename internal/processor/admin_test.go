package processor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// adminStore is fakeStore with the reads the operations requests add.
type adminStore struct{ fakeStore }

func (s *adminStore) MessageStoreTimeStamp(t string, q int32, off int64) int64 {
	if off < 0 || off >= s.max[qkey(t, q)] {
		return -1
	}
	return 1000 + off
}
func (s *adminStore) GetMessage(string, string, int32, int64, int32, int32, store.MessageFilter) *store.GetResult {
	return nil
}
func (s *adminStore) QueueIDs(string) []int32 { return nil }

func newAdmin(t *testing.T, st *adminStore) (*Admin, AdminDeps) {
	md := metadata.Deps{ConfigDir: t.TempDir(), ValidateGroup: func(string) string { return "" }}
	d := AdminDeps{
		Store:     st,
		Topics:    metadata.NewTopicConfigManager(md),
		Groups:    metadata.NewSubscriptionGroupManager(md),
		Offsets:   metadata.NewConsumerOffsetManager(md),
		Consumers: clients.NewConsumerManager(clients.Deps{}),
		Producers: clients.NewProducerManager(),
		Config: func() AdminConfig {
			return AdminConfig{BrokerName: "b", BrokerClusterName: "c", BrokerAddr: "127.0.0.1:10911"}
		},
		HoldRoute:     func(*remoting.Command, string) {},
		ValidateTopic: func(string) string { return "" },
		ValidateGroup: func(string) string { return "" },
		IsSystemTopic: func(string) bool { return false },
		SystemTopics:  func() []string { return []string{"TBW102"} },
		DelayOffsets:  func() map[int32]int64 { return nil },
	}
	return NewAdmin(d), d
}

// Every operations request with a required field answers its absence
// INVALID_PARAMETER naming the field.
func TestAdminRequiredFields(t *testing.T) {
	a, _ := newAdmin(t, &adminStore{})
	for _, tc := range []struct {
		name  string
		h     func(*transport.Conn, *remoting.Command) *remoting.Command
		ext   map[string]string
		field string
	}{
		{"GET_TOPIC_STATS_INFO", a.HandleGetTopicStatsInfo, nil, "topic"},
		{"GET_CONSUME_STATS", a.HandleGetConsumeStats, nil, "consumerGroup"},
		{"GET_BROKER_CONSUME_STATS", a.HandleGetBrokerConsumeStats, nil, "isOrder"},
		{"QUERY_CONSUME_TIME_SPAN", a.HandleQueryConsumeTimeSpan, map[string]string{"group": "g"}, "topic"},
		{"QUERY_CONSUME_QUEUE", a.HandleQueryConsumeQueue, nil, "topic"},
		{"GET_CONSUMER_CONNECTION_LIST", a.HandleGetConsumerConnectionList, nil, "consumerGroup"},
		{"GET_PRODUCER_CONNECTION_LIST", a.HandleGetProducerConnectionList, nil, "producerGroup"},
		{"GET_TOPIC_CONFIG", a.HandleGetTopicConfig, nil, "topic"},
		{"QUERY_TOPIC_CONSUME_BY_WHO", a.HandleQueryTopicConsumeByWho, nil, "topic"},
		{"QUERY_TOPICS_BY_CONSUMER", a.HandleQueryTopicsByConsumer, nil, "group"},
		{"INVOKE_BROKER_TO_RESET_OFFSET", a.HandleInvokeBrokerToResetOffset, map[string]string{"topic": "T", "timestamp": "0", "isForce": "true"}, "group"},
		{"INVOKE_BROKER_TO_GET_CONSUMER_STATUS", a.HandleInvokeBrokerToGetConsumerStatus, map[string]string{"group": "g"}, "topic"},
		{"GET_CONSUMER_RUNNING_INFO", a.HandleGetConsumerRunningInfo, map[string]string{"clientId": "c"}, "consumerGroup"},
		{"CONSUME_MESSAGE_DIRECTLY", a.HandleConsumeMessageDirectly, map[string]string{"consumerGroup": "g", "msgId": "x"}, "clientId"},
	} {
		r := tc.h(nil, req(0, tc.ext))
		if want := ErrBadHeader.Error() + ": missing ext field " + tc.field; r.Code != remoting.InvalidParameter || r.Remark != want {
			t.Errorf("%s: code %d remark %q, want %q", tc.name, r.Code, r.Remark, want)
		}
	}
	r := a.HandleInvokeBrokerToResetOffset(nil, req(0, map[string]string{"topic": "T", "group": "g", "timestamp": "soon", "isForce": "true"}))
	if r.Code != remoting.InvalidParameter || !strings.Contains(r.Remark, `timestamp="soon" is not an integer`) {
		t.Errorf("malformed timestamp: code %d remark %q", r.Code, r.Remark)
	}
}

// A group that is online with subscriptions leaves the topics it does not
// subscribe to out of GET_CONSUME_STATS, as RocketMQ does; topicList
// skips that check.
func TestConsumeStatsSubscriptionCheck(t *testing.T) {
	st := &adminStore{fakeStore{max: map[string]int64{qkey("A", 0): 5, qkey("B", 0): 3}}}
	a, d := newAdmin(t, st)
	d.Topics.Put(metadata.NewTopicConfig("A", 1, 1, 6))
	d.Topics.Put(metadata.NewTopicConfig("B", 1, 1, 6))
	d.Offsets.Commit("g", "A", 0, 2)
	d.Offsets.Commit("g", "B", 0, 1)
	topics := func(ext map[string]string) string {
		t.Helper()
		r := a.HandleGetConsumeStats(nil, req(remoting.GetConsumeStats, ext))
		var cs adminbody.ConsumeStats
		if err := adminbody.Unmarshal(r.Body, &cs); err != nil || r.Code != remoting.Success {
			t.Fatalf("code %d %s: %v", r.Code, r.Body, err)
		}
		var out []string
		for mq, w := range cs.OffsetTable {
			out = append(out, mq.Topic)
			if mq.Topic == "A" && (w.BrokerOffset != 5 || w.ConsumerOffset != 2 || w.LastTimestamp != 1001) {
				t.Errorf("A: %+v", w)
			}
		}
		sortStrings(out)
		return strings.Join(out, ",")
	}
	if got := topics(map[string]string{"consumerGroup": "g"}); got != "A,B" {
		t.Errorf("offline group: %s", got)
	}
	// An online member subscribed to A only: its connection registers it.
	srv := transport.NewServer(transport.ServerConfig{})
	srv.Register(remoting.HeartBeat, func(c *transport.Conn, r *remoting.Command) *remoting.Command {
		d.Consumers.Register(&clients.Channel{Conn: c, ClientID: "c"}, clients.Registration{Group: "g",
			Subscriptions: []*clients.Subscription{clients.NormalizeSubscription(clients.SubscriptionData{Topic: "A", SubString: "*"})}}, false)
		return remoting.NewResponse(r, remoting.Success, "")
	}, nil)
	la, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := transport.NewClient(transport.ClientConfig{})
	t.Cleanup(func() {
		cl.Close()
		srv.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := cl.Invoke(ctx, la.String(), remoting.NewRequest(remoting.HeartBeat, nil, nil)); err != nil || r.Code != remoting.Success {
		t.Fatalf("register: %v %v", r, err)
	}
	if got := topics(map[string]string{"consumerGroup": "g"}); got != "A" {
		t.Errorf("online group subscribed to A: %s", got)
	}
	if got := topics(map[string]string{"consumerGroup": "g", "topicList": "B;A"}); got != "A,B" {
		t.Errorf("topicList: %s", got)
	}
}
