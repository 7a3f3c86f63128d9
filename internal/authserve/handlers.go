package authserve

import (
	"encoding/json"
	"errors"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// answer maps a store error to RocketMQ's answer: a bad body or name is
// INVALID_PARAMETER, anything else SYSTEM_ERROR, with the error's text.
func answer(req *remoting.Command, err error) *remoting.Command {
	if err == nil {
		return remoting.NewResponse(req, remoting.Success, "")
	}
	code := remoting.SystemError
	if errors.Is(err, auth.ErrInvalid) {
		code = remoting.InvalidParameter
	}
	return remoting.NewResponse(req, code, err.Error())
}

func jsonAnswer(req *remoting.Command, v any) *remoting.Command {
	b, err := json.Marshal(v)
	if err != nil {
		return answer(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = b
	return resp
}

var errNoStore = errors.New("authentication and authorization are off on this server (authenticationEnabled, authorizationEnabled)")

func (s *Service) ready(req *remoting.Command) *remoting.Command {
	if s.store == nil {
		return remoting.NewResponse(req, remoting.SystemError, errNoStore.Error())
	}
	return nil
}

// HandleCreateUser serves AUTH_CREATE_USER: header username, body UserInfo.
func (s *Service) HandleCreateUser(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.putUser(req, func(u auth.User) error { return s.store.CreateUser(u) })
}

// HandleUpdateUser serves AUTH_UPDATE_USER: header username, body
// UserInfo; empty fields keep their values.
func (s *Service) HandleUpdateUser(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.putUser(req, func(u auth.User) error { return s.store.UpdateUser(u) })
}

// putUser decodes the UserInfo of a create or update and stores it.
func (s *Service) putUser(req *remoting.Command, put func(auth.User) error) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	info, err := auth.DecodeUserInfo(req.Body)
	if err != nil {
		return answer(req, err)
	}
	u, err := auth.InfoToUser(info, req.Ext(auth.HeaderUsername))
	if err == nil {
		err = put(u)
	}
	return answer(req, err)
}

// HandleDeleteUser serves AUTH_DELETE_USER: header username.
func (s *Service) HandleDeleteUser(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	return answer(req, s.store.DeleteUser(req.Ext(auth.HeaderUsername)))
}

// HandleGetUser serves AUTH_GET_USER: header username; the answer is a
// UserInfo without the password (an unknown user answers an empty body).
func (s *Service) HandleGetUser(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	u, ok := s.store.User(req.Ext(auth.HeaderUsername))
	if !ok {
		return remoting.NewResponse(req, remoting.Success, "")
	}
	return jsonAnswer(req, auth.UserToInfo(u, false))
}

// HandleListUser serves AUTH_LIST_USER: header filter (a name
// substring); the answer is a JSON array of UserInfo without passwords.
func (s *Service) HandleListUser(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	out := []auth.UserInfo{}
	for _, u := range s.store.Users(req.Ext(auth.HeaderFilter)) {
		out = append(out, auth.UserToInfo(u, false))
	}
	return jsonAnswer(req, out)
}

func (s *Service) putACL(req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	info, err := auth.DecodeAclInfo(req.Body)
	if err != nil {
		return answer(req, err)
	}
	a, err := auth.InfoToACL(info, req.Ext(auth.HeaderSubject))
	if err == nil {
		err = s.store.PutACL(a)
	}
	return answer(req, err)
}

// HandleCreateACL serves AUTH_CREATE_ACL: header subject, body AclInfo.
func (s *Service) HandleCreateACL(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.putACL(req)
}

// HandleUpdateACL serves AUTH_UPDATE_ACL: header subject, body AclInfo
// (merged into the subject's ACL).
func (s *Service) HandleUpdateACL(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.putACL(req)
}

// HandleDeleteACL serves AUTH_DELETE_ACL: header subject, optional
// policyType and resource (one entry; else the whole ACL).
func (s *Service) HandleDeleteACL(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	name, err := auth.ParseSubject(req.Ext(auth.HeaderSubject))
	if err != nil {
		return answer(req, err)
	}
	var t auth.PolicyType
	if v := req.Ext(auth.HeaderPolicyType); v != "" {
		if t, err = auth.ParsePolicyType(v); err != nil {
			return answer(req, err)
		}
	}
	var res *auth.Resource
	if v := req.Ext(auth.HeaderResource); v != "" {
		r, err := auth.ParseResource(v)
		if err != nil {
			return answer(req, err)
		}
		res = &r
	}
	return answer(req, s.store.DeleteACL(name, t, res))
}

// HandleGetACL serves AUTH_GET_ACL: header subject; the answer is an
// AclInfo (empty body when the subject has none).
func (s *Service) HandleGetACL(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	name, err := auth.ParseSubject(req.Ext(auth.HeaderSubject))
	if err != nil {
		return answer(req, err)
	}
	a, ok := s.store.ACL(name)
	if !ok {
		return remoting.NewResponse(req, remoting.Success, "")
	}
	return jsonAnswer(req, auth.ACLToInfo(a))
}

// HandleListACL serves AUTH_LIST_ACL: headers subjectFilter and
// resourceFilter; the answer is a JSON array of AclInfo.
func (s *Service) HandleListACL(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if r := s.ready(req); r != nil {
		return r
	}
	out := []auth.AclInfo{}
	for _, a := range s.store.ACLs(req.Ext(auth.HeaderSubjectFilter), req.Ext(auth.HeaderResourceFilter)) {
		out = append(out, auth.ACLToInfo(a))
	}
	return jsonAnswer(req, out)
}

// Handlers are the management codes' handlers, AUTH_CREATE_USER through
// AUTH_LIST_ACL (3001–3010), by code, for a server that serves them
// beside its own (the name server).
func (s *Service) Handlers() map[int32]transport.Handler {
	return map[int32]transport.Handler{
		remoting.AuthCreateUser: s.HandleCreateUser,
		remoting.AuthUpdateUser: s.HandleUpdateUser,
		remoting.AuthDeleteUser: s.HandleDeleteUser,
		remoting.AuthGetUser:    s.HandleGetUser,
		remoting.AuthListUser:   s.HandleListUser,
		remoting.AuthCreateACL:  s.HandleCreateACL,
		remoting.AuthUpdateACL:  s.HandleUpdateACL,
		remoting.AuthDeleteACL:  s.HandleDeleteACL,
		remoting.AuthGetACL:     s.HandleGetACL,
		remoting.AuthListACL:    s.HandleListACL,
	}
}
