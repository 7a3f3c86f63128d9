package transaction

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/internal/metadata"
)

// transactionIndexFile is config/transactionIndex.json, Spool's snapshot
// of the pending-half index, so a restart reads only the half and op
// records stored after it:
//
//	{"halfFrom":<half queue offset>,"opFrom":<op queue offset>,
//	 "groups":["pg", ...],
//	 "pending":[[queueOffset,commitLogOffset,size,bornTimestamp,storeTimestamp,
//	             immunityMs,checks,groupIndex,opMark], ...]}
//
// Halves at or after halfFrom may be missing from "pending", and op
// records at or after opFrom may not be reflected in it; the rebuild adds
// the first and replays the second (op records are idempotent). opMark is
// a lower bound of the op records that refer to the half.
type transactionIndexFile struct {
	HalfFrom int64      `json:"halfFrom"`
	OpFrom   int64      `json:"opFrom"`
	Groups   []string   `json:"groups"`
	Pending  [][9]int64 `json:"pending"`
	// Topics and TopicOf give each pending half's real topic (TopicOf[i]
	// indexes Topics for Pending[i]); a file without them (written before
	// they were kept) loads halves with no topic.
	Topics  []string `json:"topics,omitempty"`
	TopicOf []int64  `json:"topicOf,omitempty"`
}

// EncodeIndex builds the file's content from a snapshot.
func EncodeIndex(hs []PendingHalf, halfFrom, opFrom int64) ([]byte, error) {
	doc := transactionIndexFile{HalfFrom: halfFrom, OpFrom: opFrom, Groups: []string{}, Pending: make([][9]int64, 0, len(hs))}
	gi := map[string]int64{}
	ti := map[string]int64{}
	doc.Topics, doc.TopicOf = []string{}, make([]int64, 0, len(hs))
	for _, h := range hs {
		t, ok := ti[h.Topic]
		if !ok {
			t = int64(len(doc.Topics))
			ti[h.Topic] = t
			doc.Topics = append(doc.Topics, h.Topic)
		}
		doc.TopicOf = append(doc.TopicOf, t)
		i, ok := gi[h.Group]
		if !ok {
			i = int64(len(doc.Groups))
			gi[h.Group] = i
			doc.Groups = append(doc.Groups, h.Group)
		}
		doc.Pending = append(doc.Pending, [9]int64{h.QueueOffset, h.Phy, int64(h.Size), h.Born, h.stored, h.ImmunityMs, int64(h.Checks), i, h.OpMark})
	}
	return json.Marshal(&doc)
}

// LoadIndex reads the file; nil, nil when there is none.
func LoadIndex(path string) (*transactionIndexFile, []PendingHalf, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: read %s: %w", metadata.ErrMetadata, path, err)
	}
	var doc transactionIndexFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w: decode %s: %w", metadata.ErrMetadata, path, corrupt.Wrap(err))
	}
	hs := make([]PendingHalf, 0, len(doc.Pending))
	withTopics := len(doc.TopicOf) == len(doc.Pending)
	for n, e := range doc.Pending {
		if e[7] < 0 || e[7] >= int64(len(doc.Groups)) {
			return nil, nil, corrupt.Wrap(fmt.Errorf("%w: %s: half %d names group %d of %d", metadata.ErrMetadata, path, e[0], e[7], len(doc.Groups)))
		}
		h := PendingHalf{QueueOffset: e[0], Phy: e[1], Size: int32(e[2]), Born: e[3], stored: e[4],
			ImmunityMs: e[5], Checks: int32(e[6]), Group: doc.Groups[e[7]], OpMark: e[8]}
		if withTopics {
			if t := doc.TopicOf[n]; t >= 0 && t < int64(len(doc.Topics)) {
				h.Topic = doc.Topics[t]
			}
		}
		hs = append(hs, h)
	}
	return &doc, hs, nil
}
