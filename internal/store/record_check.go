package store

import (
	"fmt"

	"github.com/spoolmq/spool/message"
)

// checkRecordAt checks that rec is exactly one record (message.ViewRecord's
// checks and TOTALSIZE == len(rec)) that says it is at phy, and with crc
// its body CRC, and returns its view. Every reader of stored records (a
// pull, dispatch, recovery, a lookup by offset) checks through here; the
// field positions are message's alone. It allocates nothing unless it
// fails; its errors wrap ErrCorrupt.
func checkRecordAt(rec []byte, phy int64, crc bool) (message.RecordView, error) {
	v, err := recordProblem(rec, phy, crc)
	if err != nil {
		return v, fmt.Errorf("%w: record at %d: %w", ErrCorrupt, phy, err)
	}
	return v, nil
}

// recordProblem is checkRecordAt without the ErrCorrupt prefix, for
// recovery, which names the file and position itself.
func recordProblem(rec []byte, phy int64, crc bool) (message.RecordView, error) {
	v, err := message.ViewRecord(rec)
	if err != nil {
		return v, err
	}
	if n := int(v.TotalSize()); n != len(rec) {
		return v, fmt.Errorf("size %d, expected %d", n, len(rec))
	}
	if got := v.PhysicalOffset(); got != phy {
		return v, fmt.Errorf("record says it is at %d", got)
	}
	if crc {
		if err := v.CheckCRC(); err != nil {
			return v, err
		}
	}
	return v, nil
}
