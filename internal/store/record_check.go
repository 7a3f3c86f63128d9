package store

import (
	"fmt"

	"github.com/spoolmq/spool/message"
)

// checkRecordAt loads v with rec and checks that rec is exactly one record
// (message's checks and TOTALSIZE == len(rec)) that says it is at phy, and
// with crc its body CRC. Every reader of stored records (a pull, dispatch,
// recovery, a lookup by offset) checks through here; the field positions
// are message's alone. The caller keeps v on its stack, so nothing is
// copied or allocated unless the record is bad; its errors wrap
// ErrCorrupt.
func checkRecordAt(v *message.RecordView, rec []byte, phy int64, crc bool) error {
	if err := recordProblem(v, rec, phy, crc); err != nil {
		return fmt.Errorf("%w: record at %d: %w", ErrCorrupt, phy, err)
	}
	return nil
}

// recordProblem is checkRecordAt without the ErrCorrupt prefix, for
// recovery, which names the file and position itself.
func recordProblem(v *message.RecordView, rec []byte, phy int64, crc bool) error {
	if err := v.Load(rec); err != nil {
		return err
	}
	if n := int(v.TotalSize()); n != len(rec) {
		return fmt.Errorf("size %d, expected %d", n, len(rec))
	}
	if got := v.PhysicalOffset(); got != phy {
		return fmt.Errorf("record says it is at %d", got)
	}
	if crc {
		return v.CheckCRC()
	}
	return nil
}
