package broker

import (
	"fmt"
	"strconv"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// handleQueryMessage finds records by key (KEYS entry) or by UNIQ_KEY
// (_UNIQUE_KEY_QUERY=true) within a store-time range.
func (b *Broker) handleQueryMessage(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	topic := r.str("topic", true)
	key := r.str("key", true)
	maxNum := r.i32("maxNum", true, 0)
	begin := r.i64("beginTimestamp", true, 0)
	end := r.i64("endTimestamp", true, 0)
	unique := r.boolean("_UNIQUE_KEY_QUERY", false)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	if unique || maxNum <= 0 {
		maxNum = int32(b.storeConfig().DefaultQueryMaxNum)
		if maxNum <= 0 {
			maxNum = 32
		}
	}
	res, err := b.store.QueryMessage(topic, key, int(maxNum), begin, end)
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

// handleViewMessageByID answers the record at a commit-log offset.
func (b *Broker) handleViewMessageByID(c *transport.Conn, req *remoting.Command) *remoting.Command {
	r := newExtReader(req)
	offset := r.i64("offset", true, 0)
	if r.err != nil {
		return badHeader(req, r.err)
	}
	rec, err := b.store.LookMessageByOffset(offset)
	if err != nil || len(rec) == 0 {
		return response(req, remoting.SystemError, fmt.Sprintf("can not find message by the offset, %d: %v", offset, err))
	}
	resp := response(req, remoting.Success, "")
	resp.Body = rec
	return resp
}
