package datapath

import (
	"strconv"
	"strings"

	"github.com/spoolmq/spool/message"
)

// The broker writes three properties into every message a client sends,
// single, batch or reply, as RocketMQ 5.3's send processors do:
//
//	CLUSTER     brokerClusterName
//	MSG_REGION  regionId
//	TRACE_ON    traceOn, "true" or "false"
//
// The broker's values replace a client's own (RocketMQ puts them into the
// header's properties unconditionally). A batch gets them appended to each
// member's properties, after a 0x02 when the member's string lacks its
// final one, so they are the last occurrence a reader sees, as RocketMQ's
// batch encoder appends the batch's properties to every member. Consumers'
// trace hooks read MSG_REGION and TRACE_ON from consumed messages: the Java
// 5.x client drops a consumer trace whose region is missing. An empty value
// is left out, as everywhere in Spool's property strings (so with an empty
// regionId a single send loses a client's MSG_REGION, while a batch member
// keeps its own; RocketMQ stores the empty value).

// setBrokerProperties puts the broker's properties into a decoded map.
func setBrokerProperties(props map[string]string, cfg *Config) {
	props[message.PropertyCluster] = cfg.BrokerClusterName
	props[message.PropertyMsgRegion] = cfg.RegionID
	props[message.PropertyTraceSwitch] = strconv.FormatBool(cfg.TraceOn)
}

// brokerPropertiesLen is the number of bytes writeBrokerProperties writes.
func brokerPropertiesLen(cfg *Config) int {
	n := len(message.PropertyTraceSwitch) + len(strconv.FormatBool(cfg.TraceOn)) + 2
	if cfg.BrokerClusterName != "" {
		n += len(message.PropertyCluster) + len(cfg.BrokerClusterName) + 2
	}
	if cfg.RegionID != "" {
		n += len(message.PropertyMsgRegion) + len(cfg.RegionID) + 2
	}
	return n
}

// writeBrokerProperties appends the broker's properties to a property
// string being built.
func writeBrokerProperties(sb *strings.Builder, cfg *Config) {
	if cfg.BrokerClusterName != "" {
		writeProperty(sb, message.PropertyCluster, cfg.BrokerClusterName)
	}
	if cfg.RegionID != "" {
		writeProperty(sb, message.PropertyMsgRegion, cfg.RegionID)
	}
	writeProperty(sb, message.PropertyTraceSwitch, strconv.FormatBool(cfg.TraceOn))
}

// appendBrokerProperties is writeBrokerProperties into a byte buffer.
func appendBrokerProperties(dst []byte, cfg *Config) []byte {
	if cfg.BrokerClusterName != "" {
		dst = message.AppendProperty(dst, message.PropertyCluster, cfg.BrokerClusterName)
	}
	if cfg.RegionID != "" {
		dst = message.AppendProperty(dst, message.PropertyMsgRegion, cfg.RegionID)
	}
	return message.AppendProperty(dst, message.PropertyTraceSwitch, strconv.FormatBool(cfg.TraceOn))
}

// needsSeparator reports whether a property string must get a 0x02 before
// more pairs are appended to it.
func needsSeparator(s string) bool {
	return s != "" && s[len(s)-1] != message.PropertySeparator
}

// addBrokerPropertiesToBatch appends the broker's properties to the
// properties of every member of a batch. The new strings share one
// allocation.
func addBrokerPropertiesToBatch(members []message.BatchMember, cfg *Config) {
	n := brokerPropertiesLen(cfg)
	total := 0
	for i := range members {
		total += len(members[i].PropertiesString) + n
		if needsSeparator(members[i].PropertiesString) {
			total++
		}
	}
	var sb strings.Builder
	sb.Grow(total)
	for i := range members {
		p := members[i].PropertiesString
		sb.WriteString(p)
		if needsSeparator(p) {
			sb.WriteByte(message.PropertySeparator)
		}
		writeBrokerProperties(&sb, cfg)
	}
	all := sb.String()
	at := 0
	for i := range members {
		end := at + len(members[i].PropertiesString) + n
		if needsSeparator(members[i].PropertiesString) {
			end++
		}
		members[i].PropertiesString = all[at:end]
		at = end
	}
}
