package transport

import (
	"context"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

// A handler declared with ReadsExtInline gets its request without an ext
// map and reads the fields through Ext; every other handler gets the map,
// and so does every handler while an Authorize hook is set (the hook reads
// the map).
func TestReadsExtInline(t *testing.T) {
	const codeInline, codeMap = 9001, 9002
	for _, withAuth := range []bool{false, true} {
		cfg := ServerConfig{}
		if withAuth {
			cfg.Authorize = func(c *Conn, req *remoting.Command) *remoting.Command {
				if req.ExtFields["k"] == "" {
					return remoting.NewResponse(req, remoting.NoPermission, "no map")
				}
				return nil
			}
		}
		answer := func(c *Conn, req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.SetExt("k", req.Ext("k"))
			if req.ExtFields != nil {
				resp.SetExt("map", "yes")
			}
			return resp
		}
		_, addr := startServer(t, cfg, func(s *Server) {
			s.ReadsExtInline(codeInline) // before the registration: order does not matter
			s.Register(codeInline, answer, nil)
			s.Register(codeMap, answer, nil)
		})
		cl := NewClient(ClientConfig{})
		for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			cl.cfg.Serialize = st
			for _, code := range []int32{codeInline, codeMap} {
				resp, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(code, map[string]string{"k": "v"}, nil))
				if err != nil {
					t.Fatal(err)
				}
				wantMap := code == codeMap || withAuth
				if resp.Code != remoting.Success || resp.Ext("k") != "v" || (resp.Ext("map") == "yes") != wantMap {
					t.Errorf("auth %v, serialization %d, code %d: answer %+v, want the map %v", withAuth, st, code, resp, wantMap)
				}
				if resp.ExtFields == nil {
					t.Errorf("a response reaches its caller without its map")
				}
			}
		}
		cl.Close()
	}
}

// A client with InlineResponses reads its responses without building the
// ext map, in both serializations, and the fields read through Ext and
// ExtMap are the ones sent; the default client builds the map.
func TestClientInlineResponses(t *testing.T) {
	_, addr := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(codeEcho, func(c *Conn, req *remoting.Command) *remoting.Command {
			resp, w := remoting.NewResponseExt(req, remoting.Success, "")
			w.Str("a", "1")
			w.Str("quote", "\"x\"\u0001")
			w.Close()
			return resp
		}, nil)
	})
	for _, inline := range []bool{false, true} {
		cl := NewClient(ClientConfig{InlineResponses: inline})
		for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			cl.cfg.Serialize = st
			resp, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(codeEcho, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if (resp.ExtFields == nil) != inline {
				t.Errorf("inline %v, serialization %d: ExtFields %v", inline, st, resp.ExtFields)
			}
			if resp.Ext("a") != "1" || resp.Ext("quote") != "\"x\"\u0001" || resp.ExtLen() != 2 {
				t.Errorf("inline %v, serialization %d: fields a=%q quote=%q", inline, st, resp.Ext("a"), resp.Ext("quote"))
			}
			if m := resp.ExtMap(); len(m) != 2 || m["a"] != "1" {
				t.Errorf("inline %v, serialization %d: map %v", inline, st, m)
			}
		}
		cl.Close()
	}
}
