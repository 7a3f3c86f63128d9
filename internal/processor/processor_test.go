package processor

import (
	"errors"
	"strconv"
	"testing"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// fakeStore answers queue offsets from a table; the rest is unused here.
type fakeStore struct {
	min, max map[string]int64
	inMem    bool
}

func qkey(topic string, qid int32) string { return topic + "@" + strconv.Itoa(int(qid)) }

func (s *fakeStore) MaxOffsetInQueue(t string, q int32) int64       { return s.max[qkey(t, q)] }
func (s *fakeStore) MinOffsetInQueue(t string, q int32) int64       { return s.min[qkey(t, q)] }
func (s *fakeStore) OffsetInQueueByTime(string, int32, int64) int64 { return 0 }
func (s *fakeStore) EarliestMessageTime(string, int32) int64        { return 0 }
func (s *fakeStore) CheckInMemByConsumeOffset(string, int32, int64) bool {
	return s.inMem
}
func (s *fakeStore) QueryMessage(string, string, int, int64, int64) (*store.QueryResult, error) {
	return nil, nil
}
func (s *fakeStore) LookMessageByOffset(int64) ([]byte, error) { return nil, nil }
func (s *fakeStore) DeleteTopics([]string)                     {}
func (s *fakeStore) EvictPageCache(string) (store.EvictReport, error) {
	return store.EvictReport{}, nil
}

// newProcessor builds the handlers from their Deps alone: metadata tables
// in a temporary directory, a fake store, fixed settings.
func newProcessor(t *testing.T, st *fakeStore) *Processor {
	md := metadata.Deps{ConfigDir: t.TempDir(), ValidateGroup: func(string) string { return "" }}
	return New(Deps{
		Store:         st,
		Topics:        metadata.NewTopicConfigManager(md),
		Groups:        metadata.NewSubscriptionGroupManager(md),
		Offsets:       metadata.NewConsumerOffsetManager(md),
		Consumers:     clients.NewConsumerManager(clients.Deps{}),
		Producers:     clients.NewProducerManager(),
		Locks:         clients.NewRebalanceLockManager(nil),
		Config:        func() Config { return Config{BrokerName: "b", BrokerClusterName: "c"} },
		HoldRoute:     func(*remoting.Command, string) {},
		ValidateTopic: func(string) string { return "" },
		ValidateGroup: func(string) string { return "" },
		IsSystemTopic: func(string) bool { return false },
		RetryTopic:    func(g string) string { return "%RETRY%" + g },
	})
}

func req(code int32, ext map[string]string) *remoting.Command {
	return remoting.NewRequest(code, ext, nil)
}

// UPDATE_CONSUMER_OFFSET needs the group and the topic to exist; a
// committed offset is what QUERY_CONSUMER_OFFSET answers.
func TestConsumerOffsetRules(t *testing.T) {
	p := newProcessor(t, &fakeStore{})
	up := func() *remoting.Command {
		return p.HandleUpdateConsumerOffset(nil, req(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": "g", "topic": "T", "queueId": "1", "commitOffset": "7"}))
	}
	if r := up(); r.Code != remoting.SubscriptionGroupNotExist {
		t.Fatalf("unknown group: code %d, want SUBSCRIPTION_GROUP_NOT_EXIST", r.Code)
	}
	p.groups.Put(metadata.NewSubscriptionGroupConfig("g"))
	if r := up(); r.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: code %d, want TOPIC_NOT_EXIST", r.Code)
	}
	p.topics.Put(metadata.NewTopicConfig("T", 4, 4, metadata.PermRead|metadata.PermWrite))
	if r := up(); r.Code != remoting.Success {
		t.Fatalf("commit: code %d %q", r.Code, r.Remark)
	}
	q := p.HandleQueryConsumerOffset(nil, req(remoting.QueryConsumerOffset, map[string]string{
		"consumerGroup": "g", "topic": "T", "queueId": "1", "setZeroIfNotFound": "false"}))
	if q.Code != remoting.Success || q.Ext("offset") != "7" {
		t.Fatalf("query: code %d offset %q, want 7", q.Code, q.Ext("offset"))
	}
}

// A group with no committed offset gets 0 only while the queue starts at
// 0 and its first message is in memory.
func TestQueryConsumerOffsetSetZero(t *testing.T) {
	for _, tc := range []struct {
		name  string
		min   int64
		inMem bool
		code  int32
	}{
		{"young queue in memory", 0, true, remoting.Success},
		{"first message not in memory", 0, false, remoting.QueryNotFound},
		{"queue no longer starts at 0", 5, true, remoting.QueryNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProcessor(t, &fakeStore{min: map[string]int64{qkey("T", 0): tc.min}, inMem: tc.inMem})
			r := p.HandleQueryConsumerOffset(nil, req(remoting.QueryConsumerOffset, map[string]string{
				"consumerGroup": "g", "topic": "T", "queueId": "0", "setZeroIfNotFound": "true"}))
			if r.Code != tc.code {
				t.Fatalf("code %d, want %d", r.Code, tc.code)
			}
		})
	}
}

// A header missing a required field is answered INVALID_PARAMETER with a
// remark naming it, and the error wraps ErrBadHeader.
func TestHeaderMissingField(t *testing.T) {
	p := newProcessor(t, &fakeStore{})
	r := p.HandleGetMaxOffset(nil, req(remoting.GetMaxOffset, map[string]string{"queueId": "0"}))
	if r.Code != remoting.InvalidParameter || r.Remark != ErrBadHeader.Error()+": missing ext field topic" {
		t.Fatalf("code %d remark %q", r.Code, r.Remark)
	}
	h := NewHeader(req(remoting.GetMaxOffset, nil))
	h.I32("queueId", true, 0)
	if !errors.Is(h.Err(), ErrBadHeader) {
		t.Fatalf("err %v does not wrap ErrBadHeader", h.Err())
	}
}
