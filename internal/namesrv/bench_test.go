package namesrv

import (
	"fmt"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

func benchServer(b *testing.B, brokers, topicsPerBroker int) *Server {
	cfg := DefaultConfig()
	cfg.KVConfigPath = ""
	s, err := New(cfg, nil, manualScan)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown() })
	for i := 0; i < brokers; i++ {
		names := make([]string, topicsPerBroker)
		for j := range names {
			names[j] = fmt.Sprintf("Topic%d", j)
		}
		if r := s.Handle(registerRequest(brokerSpec{cluster: "c", name: fmt.Sprintf("broker-%d", i),
			addr: fmt.Sprintf("10.0.0.%d:10911", i), topics: topics(8, names...)})); r.Code != remoting.Success {
			b.Fatal(r.Remark)
		}
	}
	return s
}

// BenchmarkRouteInfo: GET_ROUTEINFO_BY_TOPIC for a topic on 4 brokers (route
// build under the read lock plus JSON encoding).
func BenchmarkRouteInfo(b *testing.B) {
	s := benchServer(b, 4, 1000)
	req := routeReq("Topic7")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := s.Handle(req); r.Code != remoting.Success {
				b.Fatal(r.Remark)
			}
		}
	})
}

// BenchmarkRegisterBroker: a periodic re-registration of a broker with 1000
// topics, unchanged data version, JSON and compressed bodies.
func BenchmarkRegisterBroker(b *testing.B) {
	for _, compressed := range []bool{false, true} {
		b.Run(fmt.Sprintf("compressed=%v", compressed), func(b *testing.B) {
			s := benchServer(b, 0, 0)
			names := make([]string, 1000)
			for j := range names {
				names[j] = fmt.Sprintf("Topic%d", j)
			}
			req := registerRequest(brokerSpec{cluster: "c", name: "a", addr: "10.0.0.1:10911",
				topics: topics(8, names...), compressed: compressed, version: DataVersion{Counter: 1}})
			b.SetBytes(int64(len(req.Body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if r := s.Handle(req); r.Code != remoting.Success {
					b.Fatal(r.Remark)
				}
			}
		})
	}
}
