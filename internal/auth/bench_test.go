package auth

import (
	"testing"

	"github.com/spoolmq/spool/internal/vfs"
	"github.com/spoolmq/spool/remoting"
)

// BenchmarkGateSend is the check of one SEND_MESSAGE_V2 by a normal user
// allowed Pub on its topic: signature, then authorization.
func BenchmarkGateSend(b *testing.B) {
	st, err := OpenStore(vfs.Default, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := st.CreateUser(User{Username: "bench", Password: "bench-secret", Type: Normal, Status: Enabled}); err != nil {
		b.Fatal(err)
	}
	if err := st.PutACL(ACL{Username: "bench", Policies: []Policy{{Type: Custom, Entries: []Entry{entry("Topic:BenchmarkTest", Allow, nil, Pub)}}}}); err != nil {
		b.Fatal(err)
	}
	s := Settings{AuthenticationEnabled: true, AuthorizationEnabled: true, ClusterName: "DefaultCluster"}
	body := make([]byte, 128)
	ext := map[string]string{"a": "spool-bench", "b": "BenchmarkTest", "c": "TBW102", "d": "4", "e": "3",
		"f": "0", "g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x01AC11000100002A9F0000000000000000\x02", "j": "0", "k": "false"}
	SignRequest(ext, body, 317, Credentials{AccessKey: "bench", SecretKey: "bench-secret"})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if out := Gate(s, st, remoting.SendMessageV2, ext, body, 317, "127.0.0.1"); !out.Allowed {
			b.Fatal(out.Remark)
		}
	}
}

// BenchmarkSignRequest is what a client spends signing the same request.
func BenchmarkSignRequest(b *testing.B) {
	body := make([]byte, 128)
	ext := map[string]string{"a": "spool-bench", "b": "BenchmarkTest", "c": "TBW102", "d": "4", "e": "3",
		"f": "0", "g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x01AC11000100002A9F0000000000000000\x02", "j": "0", "k": "false"}
	c := Credentials{AccessKey: "bench", SecretKey: "bench-secret"}
	b.ReportAllocs()
	for range b.N {
		SignRequest(ext, body, 317, c)
	}
}
