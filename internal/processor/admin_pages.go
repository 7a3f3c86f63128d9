package processor

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/remoting"
)

// SplitMetadataSize is RocketMQ's splitMetadataSize default: the most
// topics or groups one page of GET_ALL_TOPIC_CONFIG or
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG carries.
const SplitMetadataSize = 2000

// metadataPage is a request's page of a metadata table, as RocketMQ 5's
// split metadata: a request with none of seq, max and dataVersion asks for
// the whole table; otherwise it gets the names [seq, seq+min(max,
// SplitMetadataSize)) in name order, from 0 when its dataVersion is blank
// or not the table's.
type metadataPage struct {
	paged bool
	seq   int
	max   int
	// version is the request's dataVersion (JSON), blank when absent.
	version string
}

func readPage(req *remoting.Command, seqKey, maxKey string) metadataPage {
	ext := req.ExtFields
	seqS, hasSeq := ext[seqKey]
	maxS, hasMax := ext[maxKey]
	ver, hasVer := ext["dataVersion"]
	p := metadataPage{paged: hasSeq || hasMax || hasVer, max: SplitMetadataSize, version: ver}
	if n, err := strconv.Atoi(seqS); err == nil && n > 0 {
		p.seq = n
	}
	if n, err := strconv.Atoi(maxS); err == nil && n >= 0 && n < p.max {
		p.max = n
	}
	return p
}

// pageNames is the names of the page, in name order.
func pageNames[V any](table map[string]V, p metadataPage, current metadata.DataVersion) map[string]V {
	if !p.paged {
		return table
	}
	begin := p.seq
	var asked metadata.DataVersion
	if p.version == "" || json.Unmarshal([]byte(p.version), &asked) != nil || asked != current {
		begin = 0
	}
	names := make([]string, 0, len(table))
	for k := range table {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]V, min(p.max, len(names)))
	for i := begin; i < len(names) && i < begin+p.max; i++ {
		out[names[i]] = table[names[i]]
	}
	return out
}
