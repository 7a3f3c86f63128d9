package adminbody

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MessageQueue names one queue of a topic on a broker, as RocketMQ's
// org.apache.rocketmq.common.message.MessageQueue. As a value it is the
// object {"brokerName":…,"queueId":…,"topic":…}; as a map key it is the
// same object written bare, where a string key belongs (see the package
// doc).
//
// Its fields are laid out as internal/clients' MessageQueue (the orderly
// lock table's key), so the broker converts one to the other with a plain
// conversion; this package does not import the client tables.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// mqFields has MessageQueue's fields without its methods, in name order,
// for the standard encoder.
type mqFields struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Topic      string `json:"topic"`
}

// MarshalJSON writes the queue as an object, fields in name order.
func (q MessageQueue) MarshalJSON() ([]byte, error) { return marshalStd(q.fields()) }

func (q MessageQueue) fields() mqFields {
	return mqFields{BrokerName: q.BrokerName, QueueID: q.QueueID, Topic: q.Topic}
}

func (f mqFields) queue() MessageQueue {
	return MessageQueue{Topic: f.Topic, BrokerName: f.BrokerName, QueueID: f.QueueID}
}

// MarshalText is the queue's form as a map key: the marked object text that
// Marshal writes bare.
func (q MessageQueue) MarshalText() ([]byte, error) {
	b, err := marshalStd(q.fields())
	if err != nil {
		return nil, err
	}
	return append([]byte(rawKeyMark), b...), nil
}

// UnmarshalJSON reads the queue's object (or, as a map key, the string
// holding it).
func (q *MessageQueue) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return q.UnmarshalText([]byte(s))
	}
	var f mqFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*q = f.queue()
	return nil
}

// UnmarshalText reads a map key: the object's text as Normalize leaves it
// (or marked, as MarshalText writes it).
func (q *MessageQueue) UnmarshalText(b []byte) error {
	s := strings.TrimPrefix(string(b), rawKeyMark)
	var f mqFields
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return fmt.Errorf("%w: message queue key %q", ErrSyntax, s)
	}
	*q = f.queue()
	return nil
}

// Compare orders queues as RocketMQ's MessageQueue.compareTo does: by
// topic, then broker name, then queue id (the order of a TreeMap keyed by
// queues).
func (q MessageQueue) Compare(o MessageQueue) int {
	if c := strings.Compare(q.Topic, o.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(q.BrokerName, o.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(q.QueueID, o.QueueID)
}

// String is the queue as RocketMQ's toString prints it.
func (q MessageQueue) String() string {
	return "MessageQueue [topic=" + q.Topic + ", brokerName=" + q.BrokerName + ", queueId=" + strconv.Itoa(q.QueueID) + "]"
}

// IntKey is a Java Integer used as a map key (a queue id, a delay level).
// fastjson writes such a key as a bare number ({0:5}); IntKey keys are
// written so and read back from a bare or a quoted number.
type IntKey int32

// MarshalText is the marked decimal text that Marshal writes bare.
func (id IntKey) MarshalText() ([]byte, error) {
	return strconv.AppendInt([]byte(rawKeyMark), int64(id), 10), nil
}

// UnmarshalText reads a decimal key.
func (id *IntKey) UnmarshalText(b []byte) error {
	n, err := strconv.ParseInt(strings.TrimPrefix(string(b), rawKeyMark), 10, 32)
	if err != nil {
		return fmt.Errorf("%w: integer key %q", ErrSyntax, b)
	}
	*id = IntKey(n)
	return nil
}
