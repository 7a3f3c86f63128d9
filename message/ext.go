package message

import "maps"

// Ext is a decoded copy of a stored record. Body is the body as stored
// (still compressed when SysFlag has SysFlagCompressed).
type Ext struct {
	RecordHeader
	Body       []byte
	Properties map[string]string
}

// DecodeRecord checks (including the body CRC) and copies the record at the
// start of b.
func DecodeRecord(b []byte) (*Ext, error) {
	h, err := CheckRecord(b)
	if err != nil {
		return nil, err
	}
	e := &Ext{RecordHeader: h}
	e.Body = append([]byte(nil), h.Body(b)...)
	e.Properties = DecodeProperties(string(b[h.PropertiesOffset : h.PropertiesOffset+h.PropertiesLen]))
	return e, nil
}

// ToInner builds a message to store again (retry, delayed delivery,
// transaction commit) from e. The properties map is a copy the caller may
// change; the body is shared with e. The store timestamp and offsets are
// left for the store; TagsCode is recomputed from TAGS.
func (e *Ext) ToInner() *Inner {
	props := maps.Clone(e.Properties)
	if props == nil {
		props = map[string]string{}
	}
	return &Inner{
		Topic:                     e.Topic,
		QueueID:                   e.QueueID,
		Flag:                      e.Flag,
		Body:                      e.Body,
		Properties:                props,
		SysFlag:                   e.SysFlag,
		BornTimestamp:             e.BornTimestamp,
		BornHost:                  e.BornHost,
		StoreHost:                 e.StoreHost,
		ReconsumeTimes:            e.ReconsumeTimes,
		PreparedTransactionOffset: e.PreparedTransactionOffset,
		TagsCode:                  TagsHashCode(props[PropertyTags]),
	}
}

// MsgID is the offsetMsgId of the record: store host and physical offset.
func (e *Ext) MsgID() string { return OffsetMsgID(e.StoreHost, e.PhysicalOffset) }
