package clients

import (
	"time"

	"github.com/spoolmq/spool/remoting/transport"
)

// Channel is one client connection known from its heartbeats.
type Channel struct {
	Conn       *transport.Conn
	ClientID   string
	Language   string
	Version    int32
	LastUpdate time.Time
}
