package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spoolmq/spool/internal/clients"
	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// heartbeatData is the HEART_BEAT body.
type heartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []producerData `json:"producerDataSet"`
	ConsumerDataSet []consumerData `json:"consumerDataSet"`
}

type producerData struct {
	GroupName string `json:"groupName"`
}

type consumerData struct {
	GroupName           string                     `json:"groupName"`
	ConsumeType         string                     `json:"consumeType"`
	MessageModel        string                     `json:"messageModel"`
	ConsumeFromWhere    string                     `json:"consumeFromWhere"`
	SubscriptionDataSet []clients.SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool                       `json:"unitMode"`
}

// handleHeartbeat registers a client's producer and consumer groups. For
// each consumer group it creates the group config (autoCreateSubscriptionGroup)
// and the %RETRY%<group> topic, records the subscriptions (tag codes
// recomputed with Java's hash) and notifies the group on membership change.
func (b *Broker) handleHeartbeat(c *transport.Conn, req *remoting.Command) *remoting.Command {
	var hb heartbeatData
	if err := json.Unmarshal(req.Body, &hb); err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: heartbeat body: %v", ErrBadBody, err))
	}
	cfg := b.config()
	ch := &clients.Channel{Conn: c, ClientID: hb.ClientID, Language: req.Language, Version: req.Version, LastUpdate: time.Now()}
	for _, cd := range hb.ConsumerDataSet {
		sg := b.groups.FindOrCreate(cd.GroupName, cfg.AutoCreateSubscriptionGroup)
		if sg == nil {
			continue
		}
		if sg.RetryQueueNums > 0 {
			b.topics.CreateInSendBack(retryTopic(cd.GroupName), sg.RetryQueueNums, metadata.PermRead|metadata.PermWrite, 0)
		}
		subs := make([]*clients.Subscription, 0, len(cd.SubscriptionDataSet))
		for _, sd := range cd.SubscriptionDataSet {
			subs = append(subs, clients.NormalizeSubscription(sd))
		}
		b.consumers.Register(ch, clients.Registration{
			Group:            cd.GroupName,
			ConsumeType:      cd.ConsumeType,
			MessageModel:     cd.MessageModel,
			ConsumeFromWhere: cd.ConsumeFromWhere,
			Subscriptions:    subs,
		}, sg.NotifyConsumerIdsChangedEnable && cfg.NotifyConsumerIdsChangedEnable)
	}
	for _, pd := range hb.ProducerDataSet {
		b.producers.Register(pd.GroupName, ch)
	}
	return response(req, remoting.Success, "")
}

// handleUnregisterClient removes the connection from the named groups
// (Java clients only).
func (b *Broker) handleUnregisterClient(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	r.str("clientID", true)
	pg := r.str("producerGroup", false)
	cg := r.str("consumerGroup", false)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	if pg != "" {
		b.producers.Unregister(pg, c)
	}
	if cg != "" {
		notify := b.config().NotifyConsumerIdsChangedEnable
		if sg := b.groups.Find(cg); sg != nil {
			notify = notify && sg.NotifyConsumerIdsChangedEnable
		}
		b.consumers.Unregister(cg, c, notify)
	}
	return response(req, remoting.Success, "")
}

// checkClientConfigBody is the CHECK_CLIENT_CONFIG body.
type checkClientConfigBody struct {
	ClientID         string                   `json:"clientId"`
	Group            string                   `json:"group"`
	SubscriptionData clients.SubscriptionData `json:"subscriptionData"`
}

// handleCheckClientConfig compiles a (non-TAG) subscription expression.
func (b *Broker) handleCheckClientConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	var body checkClientConfigBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: check client config body: %v", ErrBadBody, err))
	}
	sd := body.SubscriptionData
	typ := sd.ExpressionType
	if typ == "" {
		typ = clients.ExprTag
	}
	if !strings.EqualFold(typ, clients.ExprTag) && !b.config().EnablePropertyFilter {
		return response(req, remoting.SystemError,
			"The broker does not support consumer to filter message by "+typ+" (enablePropertyFilter=false)")
	}
	if _, err := clients.CompileFilter(typ, sd.SubString); err != nil {
		return response(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
			"the subscription expression [%s] of type %s does not compile: %v", sd.SubString, typ, err))
	}
	return response(req, remoting.Success, "")
}

// handleGetConsumerList answers the group's client ids.
func (b *Broker) handleGetConsumerList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	group := r.str("consumerGroup", true)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	ids := b.consumers.ClientIDs(group)
	if len(ids) == 0 {
		return response(req, remoting.SystemError, "no consumer for this group, "+group)
	}
	body, err := json.Marshal(map[string][]string{"consumerIdList": ids})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}
