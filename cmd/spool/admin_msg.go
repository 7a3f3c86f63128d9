package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/systopic"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// toolsGroup is the consumer group RocketMQ's tools pull as.
const toolsGroup = "TOOLS_CONSUMER"

func (a *admin) messageCommands() []*cobra.Command {
	return []*cobra.Command{a.queryMsgByID(), a.queryMsgByUniqueKey(), a.queryMsgByKey(), a.queryMsgByOffset(),
		a.sendMessage(), a.consumeMessage(), a.printMsg()}
}

// shownMsg is a stored message as the message commands print it.
type shownMsg struct {
	MsgID            string            `json:"msgId"`
	OffsetMsgID      string            `json:"offsetMsgId"`
	Topic            string            `json:"topic"`
	Tags             string            `json:"tags"`
	Keys             string            `json:"keys"`
	QueueID          int32             `json:"queueId"`
	QueueOffset      int64             `json:"queueOffset"`
	CommitLogOffset  int64             `json:"commitLogOffset"`
	ReconsumeTimes   int32             `json:"reconsumeTimes"`
	BornTimestamp    int64             `json:"bornTimestamp"`
	StoreTimestamp   int64             `json:"storeTimestamp"`
	BornHost         string            `json:"bornHost"`
	StoreHost        string            `json:"storeHost"`
	SysFlag          int32             `json:"sysFlag"`
	StoreSize        int32             `json:"storeSize"`
	BodyCRC          int32             `json:"bodyCRC"`
	Properties       map[string]string `json:"properties"`
	Body             string            `json:"body"`
	BrokerName       string            `json:"brokerName,omitempty"`
	PreparedTransOff int64             `json:"preparedTransactionOffset"`
}

func newShownMsg(x *message.Ext, brokerName string) shownMsg {
	off := message.OffsetMsgID(x.StoreHost, x.PhysicalOffset)
	id := x.Properties[message.PropertyUniqClientMessageIDKeyIdx]
	if id == "" {
		id = off
	}
	return shownMsg{MsgID: id, OffsetMsgID: off, Topic: x.Topic, Tags: x.Properties[message.PropertyTags],
		Keys: x.Properties[message.PropertyKeys], QueueID: x.QueueID, QueueOffset: x.QueueOffset,
		CommitLogOffset: x.PhysicalOffset, ReconsumeTimes: x.ReconsumeTimes, BornTimestamp: x.BornTimestamp,
		StoreTimestamp: x.StoreTimestamp, BornHost: x.BornHost.String(), StoreHost: x.StoreHost.String(),
		SysFlag: x.SysFlag, StoreSize: x.TotalSize, BodyCRC: x.BodyCRC, Properties: x.Properties, Body: string(x.Body),
		BrokerName: brokerName, PreparedTransOff: x.PreparedTransactionOffset}
}

// decodeRecords reads stored records back to back (a pull or query body).
func decodeRecords(body []byte) ([]*message.Ext, error) {
	var out []*message.Ext
	for len(body) > 0 {
		x, err := message.DecodeRecord(body)
		if err != nil {
			return out, err
		}
		out = append(out, x)
		body = body[x.TotalSize:]
	}
	return out, nil
}

// javaProps formats properties as Java's HashMap.toString (sorted here).
func javaProps(m map[string]string) string { return javaMap(m) }

// String is MessageExt.toString, as mqadmin prints consumed messages.
func (m shownMsg) String() string {
	return fmt.Sprintf("MessageExt [brokerName=%s, queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, bornHost=/%s, "+
		"storeTimestamp=%d, storeHost=/%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, preparedTransactionOffset=%d, "+
		"toString()=Message{topic='%s', flag=0, properties=%s, body=[%d bytes], transactionId='null'}]",
		m.BrokerName, m.QueueID, m.StoreSize, m.QueueOffset, m.SysFlag, m.BornTimestamp, m.BornHost, m.StoreTimestamp, m.StoreHost,
		m.OffsetMsgID, m.CommitLogOffset, m.BodyCRC, m.ReconsumeTimes, m.PreparedTransOff, m.Topic, javaProps(m.Properties), len(m.Body))
}

// printMsgDetail prints one message as mqadmin's queryMsgById does,
// writing the body to a file under the temp directory.
func (e *adminEnv) printMsgDetail(m shownMsg) error {
	dir := filepath.Join(os.TempDir(), "rocketmq", "msgbodys")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, m.MsgID)
	if err := os.WriteFile(path, []byte(m.Body), 0o644); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"OffsetID:", m.OffsetMsgID}, {"Topic:", m.Topic}, {"Tags:", "[" + m.Tags + "]"}, {"Keys:", "[" + m.Keys + "]"},
		{"Queue ID:", strconv.Itoa(int(m.QueueID))}, {"Queue Offset:", strconv.FormatInt(m.QueueOffset, 10)},
		{"CommitLog Offset:", strconv.FormatInt(m.CommitLogOffset, 10)}, {"Reconsume Times:", strconv.Itoa(int(m.ReconsumeTimes))},
		{"Born Timestamp:", javaTime(m.BornTimestamp)}, {"Store Timestamp:", javaTime(m.StoreTimestamp)},
		{"Born Host:", m.BornHost}, {"Store Host:", m.StoreHost}, {"System Flag:", strconv.Itoa(int(m.SysFlag))},
		{"Properties:", javaProps(m.Properties)}, {"Message Body Path:", path},
	} {
		e.printf("%-20s %s\n", kv[0], kv[1])
	}
	return nil
}

func (e *adminEnv) showMsgs(ms []shownMsg) error {
	if e.jsonOut() {
		return e.printJSON(ms)
	}
	for i, m := range ms {
		if i > 0 {
			e.printf("\n")
		}
		if err := e.printMsgDetail(m); err != nil {
			return err
		}
	}
	return nil
}

// viewByOffsetID fetches a message by its offset message id
// (VIEW_MESSAGE_BY_ID at the store host it names).
func (e *adminEnv) viewByOffsetID(id string) (shownMsg, error) {
	host, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return shownMsg{}, err
	}
	addr := host.String()
	resp, err := e.brokerCall(addr, remoting.ViewMessageByID, "VIEW_MESSAGE_BY_ID", map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
	if err != nil {
		return shownMsg{}, err
	}
	xs, err := decodeRecords(resp.Body)
	if err != nil || len(xs) == 0 {
		return shownMsg{}, fmt.Errorf("VIEW_MESSAGE_BY_ID answer of %s: %v", addr, err)
	}
	return newShownMsg(xs[0], ""), nil
}

// queryIndex sends QUERY_MESSAGE to every master of topic's route.
func (e *adminEnv) queryIndex(topic, key string, maxNum int, begin, end int64, unique bool) ([]shownMsg, error) {
	r, err := e.routeOf(topic)
	if err != nil {
		return nil, err
	}
	var out []shownMsg
	seen := map[string]bool{}
	for _, qd := range r.QueueDatas {
		addr := r.masterAddr(qd.BrokerName)
		if addr == "" || seen[addr] {
			continue
		}
		seen[addr] = true
		ext := map[string]string{"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
			"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10)}
		if unique {
			ext["_UNIQUE_KEY_QUERY"] = "true"
		}
		resp, err := call(e.cli, addr, remoting.NewRequest(remoting.QueryMessage, ext, nil), remoting.QueryNotFound)
		if err != nil {
			return nil, refusal("QUERY_MESSAGE", remoting.QueryMessage, addr, resp, err)
		}
		if resp.Code == remoting.QueryNotFound {
			continue
		}
		xs, err := decodeRecords(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("QUERY_MESSAGE answer of %s: %w", addr, err)
		}
		for _, x := range xs {
			out = append(out, newShownMsg(x, qd.BrokerName))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StoreTimestamp < out[j].StoreTimestamp })
	return out, nil
}

func (a *admin) queryMsgByID() *cobra.Command {
	var ids, topic string
	c := a.command("queryMsgById", "print messages by message id (offset id, or unique key with -t)", true, func(e *adminEnv, _ []string) error {
		if ids == "" {
			return errors.New("give -i MSG_ID[,MSG_ID...]")
		}
		var ms []shownMsg
		for _, id := range strings.Split(ids, ",") {
			id = strings.TrimSpace(id)
			m, err := e.viewByOffsetID(id)
			if err == nil {
				ms = append(ms, m)
				continue
			}
			if topic == "" {
				return fmt.Errorf("message %s: %v (give -t TOPIC to look it up as a unique key)", id, err)
			}
			found, qerr := e.queryIndex(topic, id, 32, 0, time.Now().UnixMilli()+60000, true)
			if qerr != nil {
				return qerr
			}
			if len(found) == 0 {
				return fmt.Errorf("message %s not found in topic %s", id, topic)
			}
			ms = append(ms, found...)
		}
		return e.showMsgs(ms)
	})
	c.Flags().StringVarP(&ids, "msgId", "i", "", "message id(s), ','-separated")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name (to look an id up as a unique key)")
	return c
}

func (a *admin) queryMsgByUniqueKey() *cobra.Command {
	var id, topic string
	c := a.command("queryMsgByUniqueKey", "print messages by their unique key (the client's message id)", true, func(e *adminEnv, _ []string) error {
		if id == "" || topic == "" {
			return errors.New("give -i MSG_ID and -t TOPIC")
		}
		ms, err := e.queryIndex(topic, id, 32, 0, time.Now().UnixMilli()+60000, true)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return fmt.Errorf("message %s not found in topic %s", id, topic)
		}
		return e.showMsgs(ms)
	})
	c.Flags().StringVarP(&id, "msgId", "i", "", "message id")
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	return c
}

func (a *admin) queryMsgByKey() *cobra.Command {
	var topic, key, begin, end string
	var maxNum int
	c := a.command("queryMsgByKey", "list messages by key (QUERY_MESSAGE)", true, func(e *adminEnv, _ []string) error {
		if topic == "" || key == "" {
			return errors.New("give -t TOPIC and -k KEY")
		}
		b, err := parseTimeFlag("b", begin, 0)
		if err != nil {
			return err
		}
		en, err := parseTimeFlag("e", end, time.Now().UnixMilli()+60000)
		if err != nil {
			return err
		}
		ms, err := e.queryIndex(topic, key, maxNum, b, en, false)
		if err != nil {
			return err
		}
		if e.jsonOut() {
			return e.printJSON(ms)
		}
		e.printf("%-50s %4s %40s\n", "#Message ID", "#QID", "#Offset")
		for _, m := range ms {
			e.printf("%-50s %4d %40d\n", m.MsgID, m.QueueID, m.QueueOffset)
		}
		return nil
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&key, "msgKey", "k", "", "message key")
	c.Flags().StringVarP(&begin, "beginTimestamp", "b", "", "begin timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	c.Flags().StringVarP(&end, "endTimestamp", "e", "", "end timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	c.Flags().IntVarP(&maxNum, "maxNum", "c", 64, "the maximum number of messages to list")
	return c
}

// queueOffset asks a broker for GET_MIN_OFFSET, GET_MAX_OFFSET or
// SEARCH_OFFSET_BY_TIMESTAMP of one queue.
func (e *adminEnv) queueOffset(addr string, code int32, name, topic string, qid int, ts int64) (int64, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(qid)}
	if code == remoting.SearchOffsetByTimestamp {
		ext["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp, err := e.brokerCall(addr, code, name, ext, nil)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(resp.Ext("offset"), 10, 64)
}

// pullRange pulls [from, to) of one queue as TOOLS_CONSUMER, at most max
// messages.
func (e *adminEnv) pullRange(q queueRef, topic, group string, from, to int64, max int) ([]shownMsg, error) {
	var out []shownMsg
	for from < to && len(out) < max {
		n := min(32, max-len(out))
		resp, err := pullRequest(context.Background(), e.cli, q, pullSpec{topic: topic, group: group, batch: n}, from, false)
		if err != nil {
			return out, err
		}
		switch resp.Code {
		case remoting.Success:
		case remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
			return out, nil
		default:
			return out, refusal("PULL_MESSAGE", remoting.PullMessage, q.addr, resp, errors.New(resp.Remark))
		}
		xs, err := decodeRecords(resp.Body)
		if err != nil {
			return out, fmt.Errorf("pull answer of %s: %w", q.addr, err)
		}
		if len(xs) == 0 {
			return out, nil
		}
		for _, x := range xs {
			if x.QueueOffset >= to || len(out) >= max {
				return out, nil
			}
			out = append(out, newShownMsg(x, q.brokerName))
		}
		next, err := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
		if err != nil || next <= from {
			return out, nil
		}
		from = next
	}
	return out, nil
}

func (a *admin) queryMsgByOffset() *cobra.Command {
	var topic, brokerName string
	var qid int
	var offset int64
	c := a.command("queryMsgByOffset", "print the message at a queue offset", false, func(e *adminEnv, _ []string) error {
		if topic == "" || brokerName == "" || qid < 0 || offset < 0 {
			return errors.New("give -t TOPIC -b BROKER_NAME -i QUEUE_ID -o OFFSET")
		}
		r, err := e.routeOf(topic)
		if err != nil {
			return err
		}
		addr := r.masterAddr(brokerName)
		if addr == "" {
			return fmt.Errorf("topic %s has no master of broker %s", topic, brokerName)
		}
		ms, err := e.pullRange(queueRef{brokerName, addr, qid}, topic, toolsGroup, offset, offset+1, 1)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return fmt.Errorf("no message at %s %s queue %d offset %d", topic, brokerName, qid, offset)
		}
		return e.showMsgs(ms)
	})
	c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	c.Flags().StringVarP(&brokerName, "brokerName", "b", "", "broker name")
	c.Flags().IntVarP(&qid, "queueId", "i", -1, "queue id")
	c.Flags().Int64VarP(&offset, "offset", "o", -1, "queue offset")
	return c
}

func (a *admin) sendMessage() *cobra.Command {
	var topic, body, keys, tags, brokerName string
	var qid int
	c := a.command("sendMessage", "send one message (SEND_MESSAGE_V2)", true, func(e *adminEnv, _ []string) error {
		if topic == "" || body == "" {
			return errors.New("give -t TOPIC and -p BODY")
		}
		r, err := e.routeOf(topic)
		if err != nil {
			return err
		}
		qs := r.writeQueues()
		var q queueRef
		switch {
		case brokerName != "" && qid >= 0:
			q = queueRef{brokerName, r.masterAddr(brokerName), qid}
		case brokerName != "":
			for _, c := range qs {
				if c.brokerName == brokerName {
					q = c
					break
				}
			}
		case len(qs) > 0:
			q = qs[int(time.Now().UnixNano()/1000)%len(qs)]
		}
		if q.addr == "" {
			return fmt.Errorf("topic %s has no writable queue there", topic)
		}
		uniq := message.NewUniqID()
		props := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: uniq, "WAIT": "true"}
		if keys != "" {
			props[message.PropertyKeys] = keys
		}
		if tags != "" {
			props[message.PropertyTags] = tags
		}
		ext := map[string]string{"a": toolsGroup + "_PRODUCER", "b": topic, "c": systopic.AutoCreate, "d": "4",
			"e": strconv.Itoa(q.queueID), "f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0",
			"i": message.EncodeProperties(props), "j": "0", "k": "false"}
		resp, err := call(e.cli, q.addr, remoting.NewRequest(remoting.SendMessageV2, ext, []byte(body)),
			remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable)
		if err != nil {
			return refusal("SEND_MESSAGE_V2", remoting.SendMessageV2, q.addr, resp, err)
		}
		status := map[int32]string{remoting.Success: "SEND_OK", remoting.FlushDiskTimeout: "FLUSH_DISK_TIMEOUT",
			remoting.FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT", remoting.SlaveNotAvailable: "SLAVE_NOT_AVAILABLE"}[resp.Code]
		qidAns, _ := strconv.Atoi(resp.Ext("queueId"))
		if e.jsonOut() {
			off, _ := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
			return e.printJSON(map[string]any{"brokerName": q.brokerName, "queueId": qidAns, "sendStatus": status,
				"msgId": uniq, "offsetMsgId": resp.Ext("msgId"), "queueOffset": off})
		}
		e.printf("%-32s  %-4s  %-20s    %s\n", "#Broker Name", "#QID", "#Send Result", "#MsgId")
		e.printf("%-32s  %-4d  %-20s    %s\n", q.brokerName, qidAns, status, uniq)
		return nil
	})
	f := c.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&body, "body", "p", "", "UTF-8 string format of the message body")
	f.StringVarP(&keys, "key", "k", "", "message keys")
	f.StringVarP(&tags, "tags", "c", "", "message tags")
	f.StringVarP(&brokerName, "broker", "b", "", "send to which broker")
	f.IntVarP(&qid, "qid", "i", -1, "send to which queue")
	return c
}

// readQueuesOf lists the read queues of topic, only brokerName's (and
// only queue qid) when given.
func (e *adminEnv) readQueuesOf(topic, brokerName string, qid int) ([]queueRef, error) {
	r, err := e.routeOf(topic)
	if err != nil {
		return nil, err
	}
	var out []queueRef
	for _, q := range r.readQueues() {
		if (brokerName == "" || q.brokerName == brokerName) && (qid < 0 || q.queueID == qid) {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s has no readable queue there", topic)
	}
	return out, nil
}

// queueWindow is the [from, to) offsets of a queue between two store
// times, or from a given offset.
func (e *adminEnv) queueWindow(q queueRef, topic string, offset, begin, end int64) (int64, int64, int64, error) {
	minOff, err := e.queueOffset(q.addr, remoting.GetMinOffset, "GET_MIN_OFFSET", topic, q.queueID, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	maxOff, err := e.queueOffset(q.addr, remoting.GetMaxOffset, "GET_MAX_OFFSET", topic, q.queueID, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	from, to := minOff, maxOff
	if offset >= 0 {
		from = max(offset, minOff)
	} else if begin > 0 {
		if from, err = e.queueOffset(q.addr, remoting.SearchOffsetByTimestamp, "SEARCH_OFFSET_BY_TIMESTAMP", topic, q.queueID, begin); err != nil {
			return 0, 0, 0, err
		}
	}
	if end > 0 {
		if to, err = e.queueOffset(q.addr, remoting.SearchOffsetByTimestamp, "SEARCH_OFFSET_BY_TIMESTAMP", topic, q.queueID, end); err != nil {
			return 0, 0, 0, err
		}
	}
	return minOff, from, min(to, maxOff), nil
}

func (a *admin) consumeMessage() *cobra.Command {
	var topic, brokerName, group, begin, end string
	var qid, count int
	var offset int64
	c := a.command("consumeMessage", "pull and print a topic's messages (PULL_MESSAGE)", false, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		b, err := parseTimeFlag("s", begin, 0)
		if err != nil {
			return err
		}
		en, err := parseTimeFlag("e", end, 0)
		if err != nil {
			return err
		}
		qs, err := e.readQueuesOf(topic, brokerName, qid)
		if err != nil {
			return err
		}
		var all []shownMsg
		for _, q := range qs {
			_, from, to, err := e.queueWindow(q, topic, offset, b, en)
			if err != nil {
				return err
			}
			ms, err := e.pullRange(q, topic, group, from, to, count-len(all))
			if err != nil {
				return err
			}
			all = append(all, ms...)
			if len(all) >= count {
				break
			}
		}
		if e.jsonOut() {
			return e.printJSON(all)
		}
		for _, m := range all {
			e.printf("Consume ok\n%s\n", m)
		}
		return nil
	})
	f := c.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&brokerName, "brokerName", "b", "", "broker name")
	f.IntVarP(&qid, "queueId", "i", -1, "queue id")
	f.Int64VarP(&offset, "offset", "o", -1, "queue offset")
	f.StringVarP(&group, "consumerGroup", "g", toolsGroup, "consumer group name")
	f.StringVarP(&begin, "beginTimestamp", "s", "", "begin timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.StringVarP(&end, "endTimestamp", "e", "", "end timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.IntVarP(&count, "messageNumber", "c", 128, "number of messages to consume")
	return c
}

func (a *admin) printMsg() *cobra.Command {
	var topic, sub, begin, end, printBody string
	var charset string
	c := a.command("printMsg", "print every message of a topic, queue by queue", true, func(e *adminEnv, _ []string) error {
		if topic == "" {
			return errors.New("give -t TOPIC")
		}
		withBody, err := boolFlag("d", printBody, true)
		if err != nil {
			return err
		}
		b, err := parseTimeFlag("b", begin, 0)
		if err != nil {
			return err
		}
		en, err := parseTimeFlag("e", end, 0)
		if err != nil {
			return err
		}
		qs, err := e.readQueuesOf(topic, "", -1)
		if err != nil {
			return err
		}
		sort.Slice(qs, func(i, j int) bool {
			if qs[i].brokerName != qs[j].brokerName {
				return qs[i].brokerName < qs[j].brokerName
			}
			return qs[i].queueID < qs[j].queueID
		})
		type queueMsgs struct {
			Topic      string     `json:"topic"`
			BrokerName string     `json:"brokerName"`
			QueueID    int        `json:"queueId"`
			MinOffset  int64      `json:"minOffset"`
			MaxOffset  int64      `json:"maxOffset"`
			Messages   []shownMsg `json:"messages"`
		}
		var out []queueMsgs
		for _, q := range qs {
			minOff, from, to, err := e.queueWindow(q, topic, -1, b, en)
			if err != nil {
				return err
			}
			ms, err := e.pullRange(q, topic, toolsGroup, from, to, int(max(to-from, 0)))
			if err != nil {
				return err
			}
			if sub != "" && sub != "*" {
				ms = filterTags(ms, sub)
			}
			qm := queueMsgs{topic, q.brokerName, q.queueID, minOff, to, ms}
			out = append(out, qm)
			if e.jsonOut() {
				continue
			}
			e.printf("minOffset=%d, maxOffset=%d, MessageQueue [topic=%s, brokerName=%s, queueId=%d]\n", minOff, to, topic, q.brokerName, q.queueID)
			for _, m := range ms {
				body := m.Body
				if !withBody {
					body = ""
				}
				e.printf("MSGID: %s %s BODY: %s\n", m.MsgID, m, body)
			}
		}
		if e.jsonOut() {
			return e.printJSON(out)
		}
		return nil
	})
	f := c.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&charset, "charsetName", "c", "UTF-8", "charset of the body (UTF-8 only)")
	f.StringVarP(&sub, "subExpression", "s", "*", "tags: '*' or TAG || TAG")
	f.StringVarP(&begin, "beginTimestamp", "b", "", "begin timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.StringVarP(&end, "endTimestamp", "e", "", "end timestamp (ms or yyyy-MM-dd#HH:mm:ss:SSS)")
	f.StringVarP(&printBody, "printBody", "d", "", "print the body (true|false, default true)")
	return c
}

// filterTags keeps the messages whose tag is one of "A || B".
func filterTags(ms []shownMsg, sub string) []shownMsg {
	want := map[string]bool{}
	for _, t := range strings.Split(sub, "||") {
		want[strings.TrimSpace(t)] = true
	}
	var out []shownMsg
	for _, m := range ms {
		if want[m.Tags] {
			out = append(out, m)
		}
	}
	return out
}
