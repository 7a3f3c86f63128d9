package transaction

import (
	"strconv"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// PutOp records that the half message at halfOffset is resolved (commit,
// rollback or given up), drops it from the index, then calls done with the
// answer's code.
func (s *CheckService) PutOp(halfOffset int64, done func(code int32, remark string)) {
	s.putOpTag(opDone, strconv.FormatInt(halfOffset, 10), func(code int32, remark string) {
		if code == remoting.Success {
			s.idx.Resolve(halfOffset)
		}
		done(code, remark)
	})
}

// putOpTag appends an op record and calls done with the code: tag opDone
// with body "<half queue offset>", or opCheck with body
// "<half queue offset>:<attempts>[,<half queue offset>:<attempts>...]".
func (s *CheckService) putOpTag(tag, body string, done func(code int32, remark string)) {
	props := map[string]string{message.PropertyTags: tag}
	host := s.d.StoreHost()
	m := &message.Inner{
		Topic:            s.d.OpTopic,
		QueueID:          0,
		Body:             []byte(body),
		Properties:       props,
		PropertiesString: message.EncodeProperties(props),
		BornTimestamp:    s.clock.Now().UnixMilli(),
		BornHost:         host,
		StoreHost:        host,
		TagsCode:         message.TagsHashCode(tag),
	}
	// Until done has run (and resolved the half) the op counts as in
	// flight, so an index snapshot taken meanwhile replays it.
	idx := s.idx
	id := idx.BeginOp(s.d.Store.MaxOffsetInQueue(s.d.OpTopic, 0))
	s.d.Store.PutMessage(m, func(r store.PutResult) {
		code, remark := s.d.PutCode(r)
		if code == remoting.FlushDiskTimeout {
			code = remoting.Success
		}
		done(code, remark)
		idx.EndOp(id)
	})
}
