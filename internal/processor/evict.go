package processor

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// evictAnswer is the body of an EVICT_PAGE_CACHE answer.
type evictAnswer struct {
	Files          int   `json:"files"`
	Bytes          int64 `json:"bytes"`
	ResidentBefore int64 `json:"residentBefore"`
	ResidentAfter  int64 `json:"residentAfter"`
}

// HandleEvictPageCache serves Spool's EVICT_PAGE_CACHE (code 9001, ext
// "topic" optional): the store drops the CommitLog's pages (or the pages
// holding one topic's records) from memory and reports residency measured
// before and after. Benchmarks and incident replays use it to make reads
// cold on purpose.
func (p *Processor) HandleEvictPageCache(c *transport.Conn, req *remoting.Command) *remoting.Command {
	topic := req.Ext("topic")
	if topic != "" {
		if r := p.validateTopic(topic); r != "" {
			return response(req, remoting.InvalidParameter, r)
		}
		if p.topics.Find(topic) == nil {
			return response(req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
		}
	}
	rep, err := p.store.EvictPageCache(topic)
	if err != nil {
		remark := "evict page cache: " + err.Error()
		if errors.Is(err, store.ErrNotBuilt) {
			remark = "evict page cache is not built in this store: " + err.Error()
		}
		return response(req, remoting.SystemError, remark)
	}
	body, err := json.Marshal(evictAnswer{Files: rep.Files, Bytes: rep.Bytes,
		ResidentBefore: rep.ResidentBefore, ResidentAfter: rep.ResidentAfter})
	if err != nil {
		return response(req, remoting.SystemError, err.Error())
	}
	p.logger.Info("page cache evicted", "topic", topic, "files", rep.Files, "bytes", rep.Bytes,
		"resident_before", rep.ResidentBefore, "resident_after", rep.ResidentAfter)
	resp := response(req, remoting.Success, "")
	resp.Body = body
	return resp
}
