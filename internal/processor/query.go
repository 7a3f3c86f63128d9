package processor

import (
	"fmt"
	"strconv"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// HandleQueryMessage finds records by key (KEYS entry) or by UNIQ_KEY
// (_UNIQUE_KEY_QUERY=true) within a store-time range.
func (p *Processor) HandleQueryMessage(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	topic := r.Str("topic", true)
	key := r.Str("key", true)
	maxNum := r.I32("maxNum", true, 0)
	begin := r.I64("beginTimestamp", true, 0)
	end := r.I64("endTimestamp", true, 0)
	unique := r.Bool("_UNIQUE_KEY_QUERY", false)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	if unique || maxNum <= 0 {
		maxNum = int32(p.config().DefaultQueryMaxNum)
		if maxNum <= 0 {
			maxNum = 32
		}
	}
	res, err := p.store.QueryMessage(topic, key, int(maxNum), begin, end)
	if err != nil {
		return response(req, remoting.SystemError, fmt.Sprintf("query message: %v", err))
	}
	if res == nil || len(res.Records) == 0 {
		resp := response(req, remoting.QueryNotFound, "can not find message, maybe time range not correct")
		if res != nil {
			resp.SetExt("indexLastUpdateTimestamp", strconv.FormatInt(res.IndexLastUpdateTimestamp, 10))
			resp.SetExt("indexLastUpdatePhyoffset", strconv.FormatInt(res.IndexLastUpdatePhyoffset, 10))
		}
		return resp
	}
	resp := response(req, remoting.Success, "")
	resp.SetExt("indexLastUpdateTimestamp", strconv.FormatInt(res.IndexLastUpdateTimestamp, 10))
	resp.SetExt("indexLastUpdatePhyoffset", strconv.FormatInt(res.IndexLastUpdatePhyoffset, 10))
	n := 0
	for _, rec := range res.Records {
		n += len(rec)
	}
	body := make([]byte, 0, n)
	for _, rec := range res.Records {
		body = append(body, rec...)
	}
	resp.Body = body
	return resp
}

// HandleViewMessageByID answers the record at a commit-log offset.
func (p *Processor) HandleViewMessageByID(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := NewHeader(req)
	offset := r.I64("offset", true, 0)
	if r.Err() != nil {
		return badHeader(req, r.Err())
	}
	rec, err := p.store.LookMessageByOffset(offset)
	if err != nil || len(rec) == 0 {
		return response(req, remoting.SystemError, fmt.Sprintf("can not find message by the offset, %d: %v", offset, err))
	}
	resp := response(req, remoting.Success, "")
	resp.Body = rec
	return resp
}
