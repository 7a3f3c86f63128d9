package processor

import (
	"encoding/json"
	"fmt"
	"strings"

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

// HandleHeartbeat registers a client's producer and consumer groups. For
// each consumer group it creates the group config (autoCreateSubscriptionGroup)
// and the %RETRY%<group> topic, records the subscriptions (tag codes
// recomputed with Java's hash) and notifies the group on membership change.
func (p *Processor) HandleHeartbeat(c *transport.Conn, req *remoting.Command) *remoting.Command {
	var hb heartbeatData
	if err := json.Unmarshal(req.Body, &hb); err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: heartbeat body: %v", ErrBadBody, err))
	}
	cfg := p.config()
	ch := &clients.Channel{Conn: c, ClientID: hb.ClientID, Language: req.Language, Version: req.Version, LastUpdate: p.clock.Now()}
	for _, cd := range hb.ConsumerDataSet {
		sg := p.groups.FindOrCreate(cd.GroupName, cfg.AutoCreateSubscriptionGroup)
		if sg == nil {
			continue
		}
		if sg.RetryQueueNums > 0 {
			p.topics.CreateInSendBack(p.retryTopic(cd.GroupName), sg.RetryQueueNums, metadata.PermRead|metadata.PermWrite, 0)
		}
		subs := make([]*clients.Subscription, 0, len(cd.SubscriptionDataSet))
		for _, sd := range cd.SubscriptionDataSet {
			subs = append(subs, clients.NormalizeSubscription(sd))
		}
		p.consumers.Register(ch, clients.Registration{
			Group:            cd.GroupName,
			ConsumeType:      cd.ConsumeType,
			MessageModel:     cd.MessageModel,
			ConsumeFromWhere: cd.ConsumeFromWhere,
			Subscriptions:    subs,
		}, sg.NotifyConsumerIdsChangedEnable && cfg.NotifyConsumerIdsChangedEnable)
	}
	for _, pd := range hb.ProducerDataSet {
		p.producers.Register(pd.GroupName, ch)
	}
	return response(req, remoting.Success, "")
}

// HandleUnregisterClient removes the connection from the named groups
// (Java clients only).
func (p *Processor) HandleUnregisterClient(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	r.Str("clientID", true)
	pg := r.Str("producerGroup", false)
	cg := r.Str("consumerGroup", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if pg != "" {
		p.producers.Unregister(pg, c)
	}
	if cg != "" {
		notify := p.config().NotifyConsumerIdsChangedEnable
		if sg := p.groups.Find(cg); sg != nil {
			notify = notify && sg.NotifyConsumerIdsChangedEnable
		}
		p.consumers.Unregister(cg, c, notify)
	}
	return response(req, remoting.Success, "")
}

// checkClientConfigBody is the CHECK_CLIENT_CONFIG body.
type checkClientConfigBody struct {
	ClientID         string                   `json:"clientId"`
	Group            string                   `json:"group"`
	SubscriptionData clients.SubscriptionData `json:"subscriptionData"`
}

// HandleCheckClientConfig compiles a (non-TAG) subscription expression.
func (p *Processor) HandleCheckClientConfig(c *transport.Conn, req *remoting.Command) *remoting.Command {
	var body checkClientConfigBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("%v: check client config body: %v", ErrBadBody, err))
	}
	sd := body.SubscriptionData
	typ := sd.ExpressionType
	if typ == "" {
		typ = clients.ExprTag
	}
	if !strings.EqualFold(typ, clients.ExprTag) && !p.config().EnablePropertyFilter {
		return response(req, remoting.SystemError,
			"The broker does not support consumer to filter message by "+typ+" (enablePropertyFilter=false)")
	}
	if _, err := clients.CompileFilter(typ, sd.SubString); err != nil {
		return response(req, remoting.SubscriptionParseFailed, fmt.Sprintf(
			"the subscription expression [%s] of type %s does not compile: %v", sd.SubString, typ, err))
	}
	return response(req, remoting.Success, "")
}

// HandleGetConsumerList answers the group's client ids.
func (p *Processor) HandleGetConsumerList(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	group := r.Str("consumerGroup", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	ids := p.consumers.ClientIDs(group)
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
