package transport

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// A request's body and header strings belong to its handler for good: a
// handler that keeps them and answers after it returned (as the broker's
// request-reply path pushes a reply's body after SEND_REPLY_MESSAGE's
// handler returned) finds them unchanged after the connection has read
// every later frame into the same reader buffer. Bodies and headers of
// several sizes are sent, small ones that the reader decodes in place and
// ones larger than its buffer, in both serializations, all in one write so
// that the frames share the reader's buffer.
func TestRequestBytesOutliveTheirHandler(t *testing.T) {
	const n = 48
	var (
		mu   sync.Mutex
		held []*Responder
		all  = make(chan struct{})
	)
	_, addr := startServer(t, ServerConfig{MaxInflightPerConn: 2 * n}, func(s *Server) {
		s.RegisterReply(codeEcho, func(c *Conn, req *remoting.Command) Reply {
			mu.Lock()
			defer mu.Unlock()
			r := c.Defer(req)
			held = append(held, r)
			if len(held) == n {
				close(all)
			}
			return Later(r) // answered later, after every handler returned
		}, nil)
	})

	body := func(i int) []byte {
		size := []int{1, 100, 4 << 10, readBufferSize + 7}[i%4]
		return bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	ext := func(i int) map[string]string {
		size := []int{3, 200, readBufferSize + 11}[i%3]
		return map[string]string{"k": strings.Repeat(string(rune('A'+i%26)), size), "i": fmt.Sprint(i)}
	}
	var frames []byte
	for i := range n {
		req := remoting.NewRequest(codeEcho, ext(i), body(i))
		req.Opaque = int32(i)
		req.Serialize = []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ}[i%2]
		f, err := remoting.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f...)
	}
	rc := dialRaw(t, addr)
	rc.write(frames)
	<-all

	mu.Lock()
	rs := held
	mu.Unlock()
	for _, r := range rs {
		req := r.Request()
		i := int(req.Opaque)
		if !bytes.Equal(req.Body, body(i)) {
			t.Errorf("request %d: body changed after its handler returned (%d bytes, want %d)", i, len(req.Body), len(body(i)))
		}
		for k, v := range ext(i) {
			if req.ExtFields[k] != v {
				t.Errorf("request %d: ext %s changed after its handler returned (%d bytes, want %d)", i, k, len(req.ExtFields[k]), len(v))
			}
		}
		r.Reply(echo(r.Conn(), req))
	}
	for range n {
		resp := rc.read()
		i := int(resp.Opaque)
		if !bytes.Equal(resp.Body, body(i)) || resp.Ext("k") != ext(i)["k"] || resp.Ext("i") != fmt.Sprint(i) {
			t.Errorf("answer %d: body %d bytes, ext k %d bytes, i %q", i, len(resp.Body), len(resp.Ext("k")), resp.Ext("i"))
		}
	}
}
