package processor

import (
	"fmt"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleCloneGroupOffset answers CLONE_GROUP_OFFSET (314): header srcGroup,
// destGroup (both required), topic (blank: every topic srcGroup committed)
// and offline. Each topic that exists gets destGroup's offsets replaced
// by a copy of srcGroup's; unless offline, a topic an online srcGroup
// does not subscribe to is skipped, as RocketMQ 5.3 does.
func (a *Admin) HandleCloneGroupOffset(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	h := NewHeader(req)
	src := h.Str("srcGroup", true)
	dst := h.Str("destGroup", true)
	topic := h.Str("topic", false)
	offline := h.Bool("offline", false)
	if err := h.Err(); err != nil {
		return badHeader(req, err)
	}
	topics := []string{topic}
	if topic == "" {
		topics = a.topicsOfGroup(src)
	}
	for _, t := range topics {
		if a.d.Topics.Find(t) == nil {
			a.d.Logger.Warn("cloneGroupOffset: topic config not exist", "topic", t)
			continue
		}
		if !offline {
			g, online := a.d.Consumers.Group(src)
			if _, subscribed := g.Subscriptions[t]; online && len(g.Subscriptions) > 0 && !subscribed {
				a.d.Logger.Warn(fmt.Sprintf("cloneGroupOffset: topic %s is not in the subscription of consumer group %s", t, src))
				continue
			}
		}
		a.d.Offsets.CloneOffsets(src, dst, t)
	}
	return response(req, remoting.Success, "")
}
