package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"runtime"
	"testing"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// BenchmarkRoundTrip compares transport round trips (a 1 KiB echo) on a
// bare listener, a permissive one serving plain, and TLS (permissive and
// enforcing), with 1 and 64 requests in flight on one connection.
func BenchmarkRoundTrip(b *testing.B) {
	p := newPKI(b)
	cfg := p.config(Enforcing, ClientAuthNone)
	srv, cli := serverTLS(b, cfg), clientTLS(b, cfg)
	for _, c := range []struct {
		name   string
		mode   Mode
		bare   bool
		client *tls.Config
	}{
		{"bare", Disabled, true, nil},
		{"permissive_plain", Permissive, false, nil},
		{"permissive_tls", Permissive, false, cli},
		{"enforcing_tls", Enforcing, false, cli},
	} {
		for _, inflight := range []int{1, 64} {
			b.Run(c.name+"/inflight_"+itoa(inflight), func(b *testing.B) {
				lc := ListenerConfig{Mode: c.mode, TLS: srv}
				if c.bare {
					lc = ListenerConfig{}
				}
				_, addr := startTransport(b, lc)
				d := &Dialer{TLS: c.client}
				cl := transport.NewClient(transport.ClientConfig{Dial: d.DialContext, Serialize: remoting.SerializeRocketMQ})
				defer cl.Close()
				ctx := context.Background()
				body := bytes.Repeat([]byte("m"), 1024)
				if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, body)); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.SetBytes(2 * 1024)
				b.ResetTimer()
				if inflight == 1 {
					for b.Loop() {
						if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, body)); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism((inflight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := cl.Invoke(ctx, addr, remoting.NewRequest(codeEcho, nil, body)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

func itoa(n int) string {
	if n == 1 {
		return "1"
	}
	return "64"
}
