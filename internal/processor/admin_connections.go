package processor

import (
	"fmt"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

func connection(ch clients.Channel) adminbody.Connection {
	return adminbody.Connection{
		ClientID: ch.ClientID, ClientAddr: clients.RemoteAddr(ch.Conn), Language: ch.Language, Version: int(ch.Version),
	}
}

func subscriptionData(sd clients.SubscriptionData) adminbody.SubscriptionData {
	out := adminbody.SubscriptionData{
		ClassFilterMode: sd.ClassFilterMode, ExpressionType: sd.ExpressionType, SubString: sd.SubString,
		SubVersion: sd.SubVersion, Topic: sd.Topic,
		TagsSet: adminbody.List[string]{}, CodeSet: adminbody.List[int32]{},
	}
	out.TagsSet = append(out.TagsSet, sd.TagsSet...)
	for _, c := range sd.CodeSet {
		out.CodeSet = append(out.CodeSet, int32(c))
	}
	return out
}

// HandleGetConsumerConnectionList answers GET_CONSUMER_CONNECTION_LIST:
// the group's online clients, its subscription table and how it consumes
// (ConsumerConnection), from the heartbeats' registrations.
func (a *Admin) HandleGetConsumerConnectionList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	gi, online := a.d.Consumers.Group(group)
	if !online {
		return response(req, remoting.ConsumerNotOnline, fmt.Sprintf("the consumer group[%s] not online", group))
	}
	out := adminbody.ConsumerConnection{
		ConnectionSet:     adminbody.List[adminbody.Connection]{},
		SubscriptionTable: adminbody.Map[string, adminbody.SubscriptionData]{},
		ConsumeType:       gi.ConsumeType, MessageModel: gi.MessageModel, ConsumeFromWhere: gi.ConsumeFromWhere,
	}
	for _, ch := range gi.Channels {
		out.ConnectionSet = append(out.ConnectionSet, connection(ch))
	}
	for t, sd := range gi.Subscriptions {
		out.SubscriptionTable[t] = subscriptionData(sd)
	}
	return encoded(req, &out)
}

// HandleGetProducerConnectionList answers GET_PRODUCER_CONNECTION_LIST:
// the producer group's connected clients (ProducerConnection).
func (a *Admin) HandleGetProducerConnectionList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("producerGroup", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	chs := a.d.Producers.Snapshot()[group]
	if len(chs) == 0 {
		return response(req, remoting.SystemError, fmt.Sprintf("the producer group[%s] not exist", group))
	}
	out := adminbody.ProducerConnection{ConnectionSet: adminbody.List[adminbody.Connection]{}}
	for _, ch := range chs {
		out.ConnectionSet = append(out.ConnectionSet, connection(ch))
	}
	return encoded(req, &out)
}

// HandleGetAllProducerInfo answers GET_ALL_PRODUCER_INFO: every producer
// group with its clients (ProducerTableInfo).
func (a *Admin) HandleGetAllProducerInfo(c *transport.Conn, req *remoting.Command) *remoting.Command {
	out := adminbody.ProducerTableInfo{Data: adminbody.Map[string, adminbody.List[adminbody.ProducerInfo]]{}}
	for group, chs := range a.d.Producers.Snapshot() {
		list := make(adminbody.List[adminbody.ProducerInfo], 0, len(chs))
		for _, ch := range chs {
			list = append(list, adminbody.ProducerInfo{
				ClientID: ch.ClientID, RemoteIP: clients.RemoteAddr(ch.Conn), Language: ch.Language,
				Version: int(ch.Version), LastUpdateTimestamp: ch.LastUpdate.UnixMilli(),
			})
		}
		out.Data[group] = list
	}
	return encoded(req, &out)
}
