package aclv1

import (
	"errors"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// FuzzParse: any file parses or fails with ErrInvalid, and a parsed file
// checks a request without panicking.
func FuzzParse(f *testing.F) {
	f.Add([]byte(plainACL), "127.0.0.1")
	f.Add([]byte("globalWhiteRemoteAddresses: [\"1.2.3.{4,5}\", \"10.*.*.*\", \"1-2.3.4.5\"]"), "1.2.3.4")
	f.Fuzz(func(t *testing.T, b []byte, ip string) {
		c, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v", err)
			}
			return
		}
		c.Check(Request{Code: remoting.SendMessageV2, Ext: map[string]string{"AccessKey": "RocketMQ", "b": "t"}, RemoteIP: ip})
	})
}
