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

// Slave metadata copy, as RocketMQ's SlaveSynchronize, from the master's
// main port. Every syncCheckInterval a slave asks for a one-entry page of
// the topic table (GET_ALL_TOPIC_CONFIG 21) and of the group table
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201): each carries its table's
// dataVersion, and a table is fetched whole only when that version is not
// the one last copied (syncDecision). It copies the master's timer
// checkpoint (GET_TIMER_CHECK_POINT 60) on every check, and consumer
// offsets (43) and delay offsets (45) at most every syncAllInterval, or at
// once when the master's address changes or its HA stream reconnects.
// Offsets its own consumers committed while the master was away are handed
// to the master (UPDATE_CONSUMER_OFFSET) when they are ahead of its; the
// note of them survives a restart (commit_note.go).
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

// syncAction is what a version check leads to.
type syncAction int

const (
	keepCopy    syncAction = iota // the copy is the master's current table
	adoptAnswer                   // the check's answer is the whole table: copy it
	fetchTable                    // ask for the whole table
)

// syncDecision decides, from one version check, whether a slave copies a
// table. copied is the master's dataVersion the slave copied last (nil:
// none since the master's address changed), seen the version the check
// answered, whole whether that answer held the whole table (a master
// that does not page answers it whole), sinceCopy the time since the last
// copy. A zero version names nothing and is copied every syncAllInterval.
func syncDecision(copied *metadata.DataVersion, seen metadata.DataVersion, whole bool, sinceCopy time.Duration) syncAction {
	unknown := seen == (metadata.DataVersion{})
	switch {
	case copied != nil && *copied == seen && (!unknown || sinceCopy < syncAllInterval):
		return keepCopy
	case whole:
		return adoptAnswer
	}
	return fetchTable
}

// tableSync is a slave's state for copying one table by version.
type tableSync struct {
	code             int32
	seqKey, maxKey   string // page request keys
	totalKey         string // the paged answer's table size key
	copied           *metadata.DataVersion
	copiedAt         time.Time
	adopt            func(body []byte) (metadata.DataVersion, error)
	fetches, adopted int64 // whole tables fetched, tables copied
}

// slaveSync is the state of runSlaveSync (one goroutine).
type slaveSync struct {
	addr     string
	last     time.Time // last copy of offsets and delay offsets
	connects int64     // the HA client's connect count at that copy
	topics   tableSync
	groups   tableSync
}

// slaveSyncCounts are a slave's metadata copy figures (runtime info).
type slaveSyncCounts struct {
	versionChecks, topicFetches, groupFetches, offsetsPushed atomic.Int64
}

// runSlaveSync copies the master's metadata until the broker stops.
func (b *Broker) runSlaveSync(r *replication) {
	st := b.newSlaveSync()
	b.every(syncCheckInterval, func() { b.slaveSyncRound(r, st) })
}

func (b *Broker) newSlaveSync() *slaveSync {
	return &slaveSync{
		topics: tableSync{code: remoting.GetAllTopicConfig, seqKey: "topicSeq", maxKey: "maxTopicNum", totalKey: "totalTopicNum", adopt: b.adoptTopics},
		groups: tableSync{code: remoting.GetAllSubscriptionGroupConfig, seqKey: "groupSeq", maxKey: "maxGroupNum", totalKey: "totalGroupNum", adopt: b.adoptGroups},
	}
}

// slaveSyncRound is one check against the master.
func (b *Broker) slaveSyncRound(r *replication, st *slaveSync) {
	addr := r.masterClient.get()
	if addr == "" {
		return
	}
	if addr != st.addr {
		st.addr, st.last = addr, time.Time{}
		st.topics.copied, st.groups.copied = nil, nil
	}
	var errs []string
	for _, ts := range []*tableSync{&st.topics, &st.groups} {
		if err := b.syncTable(addr, ts); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := b.syncTimerCheckpoint(addr); err != nil {
		errs = append(errs, err.Error())
	}
	connects := int64(0)
	if r.slave != nil {
		connects = r.slave.Connects()
	}
	if time.Since(st.last) >= syncAllInterval || connects != st.connects || len(b.offsets.LocalCommits()) > 0 {
		if err := b.syncOffsets(addr); err != nil {
			errs = append(errs, err.Error())
		} else {
			st.last, st.connects = time.Now(), connects
		}
	}
	if len(errs) > 0 {
		b.logger.Warn("slave: copy metadata from the master", "master", addr, "err", strings.Join(errs, "; "))
	}
}

// callMaster sends one request to the master's main port.
func (b *Broker) callMaster(addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(b.registrar.base, 10*time.Second)
	defer cancel()
	resp, err := b.registrar.client.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("%s: code %d: %s", remoting.RequestName(code), resp.Code, resp.Remark)
	}
	return resp, nil
}

// syncTable checks one table's version and copies it when it moved.
func (b *Broker) syncTable(addr string, ts *tableSync) error {
	b.syncCounts.versionChecks.Add(1)
	resp, err := b.callMaster(addr, ts.code, map[string]string{ts.seqKey: "0", ts.maxKey: "1"}, nil)
	if err != nil {
		return err
	}
	var doc struct {
		DataVersion metadata.DataVersion `json:"dataVersion"`
	}
	if err := adminbody.Unmarshal(resp.Body, &doc); err != nil {
		return fmt.Errorf("%s body: %w", remoting.RequestName(ts.code), err)
	}
	_, paged := resp.ExtFields[ts.totalKey]
	body := resp.Body
	switch syncDecision(ts.copied, doc.DataVersion, !paged, time.Since(ts.copiedAt)) {
	case keepCopy:
		return nil
	case fetchTable:
		full, err := b.callMaster(addr, ts.code, nil, nil)
		if err != nil {
			return err
		}
		body = full.Body
		ts.fetches++
		if ts.code == remoting.GetAllTopicConfig {
			b.syncCounts.topicFetches.Add(1)
		} else {
			b.syncCounts.groupFetches.Add(1)
		}
	}
	v, err := ts.adopt(body)
	if err != nil {
		return err
	}
	ts.copied, ts.copiedAt = &v, time.Now()
	ts.adopted++
	return nil
}

// syncFromMaster copies the master's topics, subscription groups,
// consumer offsets, delay offsets and timer checkpoint at once. Topics and
// groups are added and updated, never removed; a consumer offset or delay
// offset is taken only when it is ahead of the slave's, so offsets
// committed on the slave are never moved back.
func (b *Broker) syncFromMaster(addr string) error {
	var errs []string
	st := b.newSlaveSync()
	for _, ts := range []*tableSync{&st.topics, &st.groups} {
		resp, err := b.callMaster(addr, ts.code, nil, nil)
		if err == nil {
			_, err = ts.adopt(resp.Body)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := b.syncOffsets(addr); err != nil {
		errs = append(errs, err.Error())
	}
	if err := b.syncTimerCheckpoint(addr); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// syncOffsets copies the master's consumer and delay offsets forward, then
// hands the master the offsets this slave's consumers committed that are
// ahead of the master's.
func (b *Broker) syncOffsets(addr string) error {
	var errs []string
	if resp, err := b.callMaster(addr, remoting.GetAllConsumerOffset, nil, nil); err != nil {
		errs = append(errs, err.Error())
	} else if master, err := b.adoptOffsets(resp.Body); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.pushLocalOffsets(addr, master); err != nil {
		errs = append(errs, err.Error())
	}
	if resp, err := b.callMaster(addr, remoting.GetAllDelayOffset, nil, nil); err != nil {
		errs = append(errs, err.Error())
	} else if err := b.adoptDelayOffsets(resp.Body); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// pushLocalOffsets sends the master, with UPDATE_CONSUMER_OFFSET, each
// offset committed on this slave that is ahead of master (the master's
// table as just read); offsets the master holds are settled.
func (b *Broker) pushLocalOffsets(addr string, master map[metadata.OffsetKey]int64) error {
	push, settled := metadata.OffsetsToPush(b.offsets.LocalCommits(), master)
	for k, off := range settled {
		b.offsets.SettleLocal(k, off)
	}
	for k, off := range push {
		ctx, cancel := context.WithTimeout(b.registrar.base, 10*time.Second)
		resp, err := b.registrar.client.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": k.Group, "topic": k.Topic,
			"queueId": strconv.Itoa(int(k.QueueID)), "commitOffset": strconv.FormatInt(off, 10),
		}, nil))
		cancel()
		if err != nil {
			// Not answered: the entry stays for the next round.
			return fmt.Errorf("hand the master the offset %s@%s queue %d = %d: %w", k.Topic, k.Group, k.QueueID, off, err)
		}
		b.offsets.SettleLocal(k, off)
		if resp.Code != remoting.Success {
			// The master refused it (an unknown group or topic): the
			// slave keeps its offset, the master its own.
			b.logger.Warn("slave: the master refused an offset committed here while it was away",
				"topic", k.Topic, "group", k.Group, "queueId", k.QueueID, "offset", off, "code", resp.Code, "remark", resp.Remark)
			continue
		}
		b.syncCounts.offsetsPushed.Add(1)
		b.logger.Info("slave: handed the master an offset committed here while it was away",
			"topic", k.Topic, "group", k.Group, "queueId", k.QueueID, "offset", off, "master", addr)
	}
	return nil
}

func (b *Broker) adoptTopics(body []byte) (metadata.DataVersion, error) {
	var doc metadata.TopicConfigFile
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return metadata.DataVersion{}, fmt.Errorf("GET_ALL_TOPIC_CONFIG body: %w", err)
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
	return doc.DataVersion, nil
}

func (b *Broker) adoptGroups(body []byte) (metadata.DataVersion, error) {
	var doc struct {
		SubscriptionGroupTable map[string]*metadata.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
		DataVersion            metadata.DataVersion                         `json:"dataVersion"`
	}
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return metadata.DataVersion{}, fmt.Errorf("GET_ALL_SUBSCRIPTIONGROUP_CONFIG body: %w", err)
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
	return doc.DataVersion, nil
}

// adoptOffsets copies the master's consumer offsets forward and returns
// the master's table.
func (b *Broker) adoptOffsets(body []byte) (map[metadata.OffsetKey]int64, error) {
	var doc struct {
		OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	}
	if err := adminbody.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("GET_ALL_CONSUMER_OFFSET body: %w", err)
	}
	master := make(map[metadata.OffsetKey]int64)
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
			master[metadata.OffsetKey{Topic: topic, Group: group, QueueID: int32(qid)}] = off
			b.offsets.Advance(group, topic, int32(qid), off)
		}
	}
	return master, nil
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
