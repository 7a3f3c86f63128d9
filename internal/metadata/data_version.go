package metadata

import (
	"sync"

	"github.com/spoolmq/spool/internal/clock"
)

// DataVersion is RocketMQ's metadata version stamp: it changes whenever a
// table changes, and name servers compare it to skip unchanged
// registrations.
type DataVersion struct {
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
}

// versionStamp is a DataVersion guarded for concurrent use.
type versionStamp struct {
	mu  sync.Mutex
	v   DataVersion
	clk clock.Clock // stamps the timestamp
}

func newVersionStamp(clk clock.Clock) *versionStamp {
	clk = clock.Or(clk)
	return &versionStamp{v: DataVersion{Timestamp: clk.Now().UnixMilli()}, clk: clk}
}

func (s *versionStamp) next() {
	s.mu.Lock()
	s.nextLocked()
	s.mu.Unlock()
}

// nextState is next with the state version set to state, in one step.
func (s *versionStamp) nextState(state int64) {
	s.mu.Lock()
	s.v.StateVersion = state
	s.nextLocked()
	s.mu.Unlock()
}

func (s *versionStamp) nextLocked() {
	s.v.Counter++
	// Go's admin reads the counter as int32.
	if s.v.Counter > 1<<31-1 {
		s.v.Counter = 1
	}
	s.v.Timestamp = s.clk.Now().UnixMilli()
}

func (s *versionStamp) get() DataVersion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

func (s *versionStamp) set(v DataVersion) {
	s.mu.Lock()
	s.v = v
	s.mu.Unlock()
}
