package message

// Inner is a message on its way into the store: what the broker hands to
// MessageStore.PutMessage. The store assigns the queue offset, the physical
// offset and the store timestamp, and encodes the stored record.
type Inner struct {
	Topic          string
	QueueID        int32
	Flag           int32
	Body           []byte
	Properties     map[string]string
	SysFlag        int32
	BornTimestamp  int64
	BornHost       Addr
	StoreHost      Addr
	ReconsumeTimes int32
	// PreparedTransactionOffset is the commit-log offset of the half record
	// for a committed transactional message; 0 otherwise.
	PreparedTransactionOffset int64
	// TagsCode is the consume-queue tag field: the Java hash of TAGS, or a
	// delivery time for SCHEDULE_TOPIC_XXXX.
	TagsCode int64
	// PropertiesString caches EncodeProperties(Properties); when non-empty
	// it is stored as is and Properties is not re-encoded.
	PropertiesString string
	// StoreTimestamp, when non-zero, is kept instead of the store's clock
	// (used by recovery tools and tests).
	StoreTimestamp int64
	// wait is what SetWaitStoreMsgOK recorded: waitUnread, waitYes or
	// waitNo.
	wait int8
}

const (
	waitUnread int8 = iota
	waitYes
	waitNo
)

// WaitStoreMsgOK reports whether the producer waits for the store to
// accept the message (RocketMQ's isWaitStoreMsgOK: the WAIT property, true
// unless it is "false"). It reads the properties unless SetWaitStoreMsgOK
// said what they hold.
func (m *Inner) WaitStoreMsgOK() bool {
	switch m.wait {
	case waitYes:
		return true
	case waitNo:
		return false
	}
	var v string
	var ok bool
	if m.PropertiesString != "" {
		v, ok = LookupProperty(m.PropertiesString, PropertyWaitStoreMsgOK)
	} else {
		v, ok = m.Properties[PropertyWaitStoreMsgOK]
	}
	return waitValue(v, ok)
}

// SetWaitStoreMsgOK records what the WAIT property of m's final
// properties holds (found: whether it is there, v: its last value), for a
// caller that has read them already, so that WaitStoreMsgOK does not read
// them again. The properties must not change afterwards.
func (m *Inner) SetWaitStoreMsgOK(v string, found bool) {
	m.wait = waitNo
	if waitValue(v, found) {
		m.wait = waitYes
	}
}

func waitValue(v string, found bool) bool { return !found || v != "false" }

// Addr is a host address as stored in a record: an IPv4 or IPv6 address and
// a port.
type Addr struct {
	IP   []byte // 4 or 16 bytes
	Port int32
}

// Batch is a SEND_BATCH_MESSAGE put: members stored as consecutive records
// in one queue.
type Batch struct {
	Topic          string
	QueueID        int32
	SysFlag        int32
	BornTimestamp  int64
	BornHost       Addr
	StoreHost      Addr
	ReconsumeTimes int32
	Members        []BatchMember
}

// BatchMember is one message of a batch body.
type BatchMember struct {
	Flag             int32
	Body             []byte
	PropertiesString string
	TagsCode         int64
}
