package broker

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
)

// Slave metadata copy, as RocketMQ's SlaveSynchronize: topics (21),
// consumer offsets (43), delay offsets (45) and subscription groups (201)
// from the master's main port, checked every syncCheckInterval and copied
// at most every syncAllInterval, or at once when the master's address
// changes.
const (
	syncCheckInterval = 3 * time.Second
	syncAllInterval   = 60 * time.Second
)

// masterAddr is an address learnt at run time (a master's client or HA
// address, the advertised HA address), empty until set.
type masterAddr struct{ v atomic.Pointer[string] }

func (m *masterAddr) get() string {
	if p := m.v.Load(); p != nil {
		return *p
	}
	return ""
}

// set stores addr and reports whether it changed.
func (m *masterAddr) set(addr string) bool {
	if addr == "" || addr == m.get() {
		return false
	}
	m.v.Store(&addr)
	return true
}

// runSlaveSync copies the master's metadata until the broker stops.
func (b *Broker) runSlaveSync(r *replication) {
	t := time.NewTicker(syncCheckInterval)
	defer t.Stop()
	var last time.Time
	synced := ""
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		addr := r.masterClient.get()
		if addr == "" || (addr == synced && time.Since(last) < syncAllInterval) {
			continue
		}
		if err := b.syncFromMaster(addr); err != nil {
			b.logger.Warn("slave: copy metadata from the master", "master", addr, "err", err)
			continue
		}
		synced, last = addr, time.Now()
	}
}

// syncFromMaster copies the master's topics, subscription groups,
// consumer offsets and delay offsets. Topics and groups are added and
// updated, never removed; a consumer offset or delay offset is taken only
// when it is ahead of the slave's, so offsets committed on the slave are
// never moved back.
func (b *Broker) syncFromMaster(addr string) error {
	call := func(code int32) ([]byte, error) {
		ctx, cancel := context.WithTimeout(b.registrar.base, 10*time.Second)
		defer cancel()
		resp, err := b.registrar.client.Invoke(ctx, addr, remoting.NewRequest(code, nil, nil))
		if err != nil {
			return nil, err
		}
		if resp.Code != remoting.Success {
			return nil, fmt.Errorf("%s: code %d: %s", remoting.RequestName(code), resp.Code, resp.Remark)
		}
		return resp.Body, nil
	}
	var errs []string
	if body, err := call(remoting.GetAllTopicConfig); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.adoptTopics(body); err != nil {
		errs = append(errs, err.Error())
	}
	if body, err := call(remoting.GetAllConsumerOffset); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.adoptOffsets(body); err != nil {
		errs = append(errs, err.Error())
	}
	if body, err := call(remoting.GetAllDelayOffset); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.adoptDelayOffsets(body); err != nil {
		errs = append(errs, err.Error())
	}
	if body, err := call(remoting.GetAllSubscriptionGroupConfig); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.adoptGroups(body); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (b *Broker) adoptTopics(body []byte) error {
	var doc metadata.TopicConfigFile
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("GET_ALL_TOPIC_CONFIG body: %w", err)
	}
	for name, tc := range doc.TopicConfigTable {
		if tc == nil {
			continue
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		if old := b.topics.Find(tc.TopicName); old == nil || !reflect.DeepEqual(old, tc) {
			b.topics.Put(tc)
		}
	}
	return nil
}

func (b *Broker) adoptGroups(body []byte) error {
	var doc struct {
		SubscriptionGroupTable map[string]*metadata.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("GET_ALL_SUBSCRIPTIONGROUP_CONFIG body: %w", err)
	}
	for name, g := range doc.SubscriptionGroupTable {
		if g == nil {
			continue
		}
		if g.GroupName == "" {
			g.GroupName = name
		}
		if old := b.groups.Find(g.GroupName); old == nil || !reflect.DeepEqual(old, g) {
			b.groups.Put(g)
		}
	}
	return nil
}

func (b *Broker) adoptOffsets(body []byte) error {
	var doc struct {
		OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	}
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("GET_ALL_CONSUMER_OFFSET body: %w", err)
	}
	for key, queues := range doc.OffsetTable {
		topic, group, ok := strings.Cut(key, "@")
		if !ok {
			continue
		}
		for q, off := range queues {
			qid, err := strconv.ParseInt(q, 10, 32)
			if err != nil {
				continue
			}
			if off > b.offsets.Query(group, topic, int32(qid)) {
				b.offsets.Commit(group, topic, int32(qid), off)
			}
		}
	}
	return nil
}

func (b *Broker) adoptDelayOffsets(body []byte) error {
	var doc struct {
		OffsetTable map[string]int64 `json:"offsetTable"`
	}
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("GET_ALL_DELAY_OFFSET body: %w", err)
	}
	table := make(map[int]int64, len(doc.OffsetTable))
	for k, v := range doc.OffsetTable {
		level, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		table[level] = v
	}
	b.schedule.Adopt(table)
	return nil
}
