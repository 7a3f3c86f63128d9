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

// Controller mode: a send is refused before it is stored when the
// replication engine says so, with RocketMQ's code and a remark that
// says why; the post-store wait's controller-mode outcomes map the same
// way.
func TestReplicaRefusalAnswersAtOnce(t *testing.T) {
	req := &remoting.Command{Code: 10}
	if (&Path{}).replicaRefusal(req) != nil {
		t.Fatal("refused without an admission hook")
	}
	for _, c := range []struct {
		status store.PutStatus
		remark string
		code   int32
		want   string
	}{
		{store.PutOK, "", -1, ""},
		{store.InSyncReplicasNotEnough, "", remoting.SystemError, InSyncReplicasNotEnoughRemark},
		{store.ServiceNotAvailable, "[FENCED] lease lost", remoting.ServiceNotAvailable, "[FENCED] lease lost"},
	} {
		d := &Path{admitPut: func() (store.PutStatus, string) { return c.status, c.remark }}
		resp := d.replicaRefusal(req)
		if c.code < 0 {
			if resp != nil {
				t.Fatalf("%v refused", c.status)
			}
			continue
		}
		if resp == nil || resp.Code != c.code || resp.Remark != c.want {
			t.Fatalf("%v: %+v, want code %d remark %q", c.status, resp, c.code, c.want)
		}
	}
	for _, c := range []struct {
		replica store.PutStatus
		want    int32
	}{
		{store.InSyncReplicasNotEnough, remoting.SystemError},
		{store.ServiceNotAvailable, remoting.ServiceNotAvailable},
	} {
		r := CombineReplication(store.PutResult{Status: store.PutOK}, c.replica)
		if code, remark := PutStatusCode(r); code != c.want || remark == "" {
			t.Errorf("replica %v: code %d remark %q, want %d", c.replica, code, remark, c.want)
		}
	}
}
