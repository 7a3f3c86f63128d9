package clients

import (
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// notifyConsumerIdsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to
// every member connection of group, off the caller's goroutine.
func (m *ConsumerManager) notifyConsumerIdsChanged(group string, conns []*transport.Conn) {
	if len(conns) == 0 {
		return
	}
	go func() {
		for _, c := range conns {
			cmd := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil)
			cmd.Flag |= remoting.FlagOneway
			if err := c.InvokeOneway(cmd); err != nil {
				m.logger.Debug("notify consumer ids changed", "group", group, "client", remoteAddr(c), "err", err)
			}
		}
	}()
}

func remoteAddr(c *transport.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
