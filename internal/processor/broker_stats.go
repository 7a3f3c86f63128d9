package processor

import (
	"fmt"

	"github.com/spoolmq/spool/internal/adminbody"
	"github.com/spoolmq/spool/internal/brokerstats"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// StatsViewer is the part of the traffic stats VIEW_BROKER_STATS_DATA
// reads (internal/brokerstats's Manager).
type StatsViewer interface {
	View(statsName, statsKey string) (brokerstats.Stats, bool)
}

// BrokerStats answers the requests that read the broker's traffic stats.
type BrokerStats struct{ stats StatsViewer }

// NewBrokerStats returns the handlers of stats.
func NewBrokerStats(stats StatsViewer) *BrokerStats { return &BrokerStats{stats: stats} }

// HandleViewBrokerStatsData answers VIEW_BROKER_STATS_DATA (315): the
// minute, hour and day windows of the item the header's statsName and
// statsKey name, as RocketMQ's BrokerStatsData; SYSTEM_ERROR "The stats
// <name> <key> not exist" when there is no such item, as RocketMQ answers.
func (p *BrokerStats) HandleViewBrokerStatsData(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	name := r.Str("statsName", true)
	key := r.Str("statsKey", true)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	st, ok := p.stats.View(name, key)
	if !ok {
		return response(req, remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key))
	}
	body, err := adminbody.Marshal(&adminbody.BrokerStatsData{
		StatsMinute: statsItem(st.Minute),
		StatsHour:   statsItem(st.Hour),
		StatsDay:    statsItem(st.Day),
	})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}

func statsItem(w brokerstats.Window) adminbody.BrokerStatsItem {
	return adminbody.BrokerStatsItem{Sum: w.Sum, Tps: adminbody.Double(w.Tps), Avgpt: adminbody.Double(w.Avgpt)}
}
