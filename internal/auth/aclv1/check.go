package aclv1

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/remoting"
)

// traceTopic is RocketMQ's message trace topic; publishing to it is
// never refused.
const traceTopic = "RMQ_SYS_TRACE_TOPIC"

// adminCodes need an admin account (RocketMQ's Permission.ADMIN_CODE,
// restricted to the codes Spool knows).
var adminCodes = map[int32]bool{
	remoting.UpdateAndCreateTopic:             true,
	remoting.UpdateBrokerConfig:               true,
	remoting.DeleteTopicInBroker:              true,
	remoting.UpdateAndCreateSubscriptionGroup: true,
	remoting.DeleteSubscriptionGroup:          true,
}

// Need is one resource a request needs a permission on: a topic, or a
// group written as its retry topic (%RETRY%<group>), as ACL 1.0 does.
type Need struct {
	Resource string
	Perm     Perm
}

// Needs is RocketMQ's PlainAccessResource.parse for the codes Spool
// knows: what a request needs under ACL 1.0. Codes it does not list need
// nothing beyond the signature (and admin for the admin codes).
func Needs(code int32, ext map[string]string, body []byte) ([]Need, error) {
	var out []Need
	add := func(res string, p Perm) {
		if res == "" {
			return
		}
		for i := range out {
			if out[i].Resource == res {
				out[i].Perm = p
				return
			}
		}
		out = append(out, Need{res, p})
	}
	retry := func(group string) string {
		if group == "" {
			return ""
		}
		return auth.RetryPrefix + group
	}
	send := func(topic string) {
		if strings.HasPrefix(topic, auth.RetryPrefix) {
			add(topic, Sub)
		} else {
			add(topic, Pub)
		}
	}
	switch code {
	case remoting.SendMessage:
		send(ext["topic"])
	case remoting.SendMessageV2, remoting.SendBatchMessage:
		send(ext["b"])
	case remoting.ConsumerSendMsgBack:
		add(retry(ext["group"]), Sub)
	case remoting.PullMessage:
		add(ext["topic"], Sub)
		add(retry(ext["consumerGroup"]), Sub)
	case remoting.QueryMessage:
		add(ext["topic"], Sub)
	case remoting.HeartBeat:
		var hb struct {
			ConsumerDataSet []struct {
				GroupName           string `json:"groupName"`
				SubscriptionDataSet []struct {
					Topic string `json:"topic"`
				} `json:"subscriptionDataSet"`
			} `json:"consumerDataSet"`
		}
		if err := json.Unmarshal(body, &hb); err != nil {
			return nil, fmt.Errorf("%w: heartbeat body: %v", auth.ErrInvalid, err)
		}
		for _, cd := range hb.ConsumerDataSet {
			add(retry(cd.GroupName), Sub)
			for _, sd := range cd.SubscriptionDataSet {
				add(sd.Topic, Sub)
			}
		}
	case remoting.UnregisterClient, remoting.GetConsumerListByGroup:
		add(retry(ext["consumerGroup"]), Sub)
	case remoting.UpdateConsumerOffset:
		add(retry(ext["consumerGroup"]), Sub)
		add(ext["topic"], Sub)
	}
	return out, nil
}

// Request is one request to check under ACL 1.0.
type Request struct {
	Code     int32
	Ext      map[string]string
	Body     []byte
	Version  int32
	RemoteIP string
}

// Verdict is the answer; Reason is RocketMQ's text for a refusal.
type Verdict struct {
	Allowed bool
	Reason  string
}

func refuse(format string, a ...any) Verdict { return Verdict{Reason: fmt.Sprintf(format, a...)} }

// Check decides a request as RocketMQ's PlainPermissionManager.validate
// did: a global white address passes; otherwise the request names an
// account (AccessKey); the account's white address passes; otherwise
// the signature must hold; publishing to the trace topic passes; an admin
// account passes; an admin code needs an admin account; every needed
// resource needs its permission, from the account's topicPerms and
// groupPerms or else from its default topic or group permission.
func (c *Config) Check(r Request) Verdict {
	ip := strings.TrimPrefix(strings.TrimSuffix(r.RemoteIP, "]"), "[")
	for _, m := range c.global {
		if m(ip) {
			return Verdict{Allowed: true, Reason: "global white address"}
		}
	}
	ak := r.Ext[auth.AccessKeyField]
	if ak == "" {
		return refuse("No accessKey is configured")
	}
	acc, ok := c.accounts[ak]
	if !ok {
		return refuse("No acl config for %s", ak)
	}
	if acc.white(ip) {
		return Verdict{Allowed: true, Reason: "white address of " + ak}
	}
	if err := auth.Verify(r.Ext, r.Body, r.Version, acc.SecretKey); err != nil {
		return refuse("Check signature failed for accessKey=%s", ak)
	}
	needs, err := Needs(r.Code, r.Ext, r.Body)
	if err != nil {
		return refuse("%v", err)
	}
	for _, n := range needs {
		if n.Resource == traceTopic && n.Perm == Pub {
			return Verdict{Allowed: true, Reason: "trace topic"}
		}
	}
	if acc.Admin {
		return Verdict{Allowed: true, Reason: "admin account"}
	}
	if adminCodes[r.Code] {
		return refuse("Need admin permission for request code=%d, but accessKey=%s is not", r.Code, ak)
	}
	for _, n := range needs {
		group := strings.HasPrefix(n.Resource, auth.RetryPrefix)
		owned, ok := acc.perms[n.Resource]
		if !ok {
			owned = acc.defaultTopic
			if group {
				owned = acc.defaultGroup
			}
			if !allows(n.Perm, owned) {
				return refuse("No default permission for %s", printable(n.Resource, group))
			}
			continue
		}
		if !allows(n.Perm, owned) {
			return refuse("No permission for %s", printable(n.Resource, group))
		}
	}
	return Verdict{Allowed: true, Reason: "permitted"}
}

func printable(res string, group bool) string {
	if group {
		return "group:" + strings.TrimPrefix(res, auth.RetryPrefix)
	}
	return "topic:" + res
}
