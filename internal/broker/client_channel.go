package broker

import (
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// clientChannel is one client connection known from its heartbeats.
type clientChannel struct {
	conn       *transport.Conn
	clientID   string
	language   string
	version    int32
	lastUpdate time.Time
}
