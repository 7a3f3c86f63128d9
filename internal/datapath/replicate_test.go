package datapath

import (
	"testing"

	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/remoting"
)

// The send answer is the worse of the flush and the replication, as
// RocketMQ's CommitLog combines them and its SendMessageProcessor maps
// the PutMessageStatus.
func TestCombineReplicationAnswer(t *testing.T) {
	for _, c := range []struct {
		flush, replica store.PutStatus
		want           int32
	}{
		{store.PutOK, store.PutOK, remoting.Success},
		{store.FlushDiskTimeout, store.PutOK, remoting.FlushDiskTimeout},
		{store.PutOK, store.FlushSlaveTimeout, remoting.FlushSlaveTimeout},
		{store.PutOK, store.SlaveNotAvailable, remoting.SlaveNotAvailable},
		{store.FlushDiskTimeout, store.FlushSlaveTimeout, remoting.FlushSlaveTimeout},
		{store.FlushDiskTimeout, store.SlaveNotAvailable, remoting.SlaveNotAvailable},
	} {
		r := CombineReplication(store.PutResult{Status: c.flush, WroteOffset: 100, WroteBytes: 50}, c.replica)
		if code, _ := PutStatusCode(r); code != c.want {
			t.Errorf("flush %v + replica %v = code %d, want %d", c.flush, c.replica, code, c.want)
		}
	}
}

// Only a message that waits for its store (waitStoreMsgOK) waits for its
// replicas, up to the end of its records; a failed put is answered as is.
func TestReplicatedWaitsOnlyForWaitingPuts(t *testing.T) {
	var ends []int64
	d := &Path{waitReplicated: func(end int64, done func(store.PutStatus)) {
		ends = append(ends, end)
		done(store.FlushSlaveTimeout)
	}}
	var got []store.PutStatus
	done := func(r store.PutResult) { got = append(got, r.Status) }
	d.replicated(false, done)(store.PutResult{Status: store.PutOK})
	d.replicated(true, done)(store.PutResult{Status: store.PutOK, WroteOffset: 100, WroteBytes: 50})
	d.replicated(true, done)(store.PutResult{Status: store.ServiceNotAvailable})
	want := []store.PutStatus{store.PutOK, store.FlushSlaveTimeout, store.ServiceNotAvailable}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("answers %v, want %v", got, want)
	}
	if len(ends) != 1 || ends[0] != 150 {
		t.Fatalf("waited for ends %v, want [150]", ends)
	}
	if (&Path{}).replicated(true, done) == nil {
		t.Fatal("no wrapper without a replication wait")
	}
}
