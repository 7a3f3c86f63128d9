package namesrv

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/internal/config"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// The admin requests mqadmin sends a name server: the topic lists by
// cluster and by system flag, draining a broker's write permission, and
// reading or changing the name server's configuration. Their codes are
// registered in New's handler map.

// config returns a copy of the configuration as it is now.
func (s *Server) config() Config {
	s.cfgMu.RLock()
	defer s.cfgMu.RUnlock()
	return s.cfg
}

func topicListResponse(req *remoting.Command, l TopicList) *remoting.Command {
	if l.TopicList == nil {
		l.TopicList = []string{}
	}
	resp := success(req)
	resp.Body = mustMarshal(l)
	return resp
}

// topicsByCluster answers GET_TOPICS_BY_CLUSTER (header cluster): a
// TopicList of the topics on the cluster's broker names.
func (s *Server) topicsByCluster(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if !s.config().EnableTopicList {
		return remoting.NewResponse(req, remoting.SystemError, "disable")
	}
	cluster, err := requiredExt(req, "cluster")
	if err != nil {
		return errorResponse(req, err)
	}
	s.mu.RLock()
	topics := s.routes.TopicsByCluster(cluster)
	s.mu.RUnlock()
	return topicListResponse(req, TopicList{TopicList: topics})
}

// wipeWritePermOfBroker answers WIPE_WRITE_PERM_OF_BROKER (header
// brokerName) with ext wipeTopicCount.
func (s *Server) wipeWritePermOfBroker(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	name, err := requiredExt(req, "brokerName")
	if err != nil {
		return errorResponse(req, err)
	}
	s.mu.Lock()
	n := s.routes.WipeWritePerm(name)
	s.mu.Unlock()
	s.log.Info("wipe write perm of broker", "brokerName", name, "topics", n)
	resp := success(req)
	resp.SetExt("wipeTopicCount", strconv.Itoa(n))
	return resp
}

// addWritePermOfBroker answers ADD_WRITE_PERM_OF_BROKER (header
// brokerName) with ext addTopicCount.
func (s *Server) addWritePermOfBroker(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	name, err := requiredExt(req, "brokerName")
	if err != nil {
		return errorResponse(req, err)
	}
	s.mu.Lock()
	n := s.routes.AddWritePerm(name)
	s.mu.Unlock()
	s.log.Info("add write perm of broker", "brokerName", name, "topics", n)
	resp := success(req)
	resp.SetExt("addTopicCount", strconv.Itoa(n))
	return resp
}

// getNamesrvConfig answers GET_NAMESRV_CONFIG: every key as a .properties
// text ("key=value" lines, sorted), UTF-8.
func (s *Server) getNamesrvConfig(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	cfg := s.config()
	kv := config.Dump(&cfg)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&buf, "%s=%s\n", k, kv[k])
	}
	resp := success(req)
	resp.Body = buf.Bytes()
	return resp
}

// updateNamesrvConfig answers UPDATE_NAMESRV_CONFIG: the body is a
// .properties text. A body that does not parse is SYSTEM_ERROR, a key of
// configBlackList NO_PERMISSION (as RocketMQ); a key Spool cannot change
// while running, an unknown key or a bad value is INVALID_PARAMETER, and
// then nothing is applied. Changes last until the process restarts.
func (s *Server) updateNamesrvConfig(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	if len(req.Body) == 0 {
		return success(req)
	}
	props, err := config.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "string2Properties error: "+err.Error())
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	for _, k := range strings.Split(s.cfg.ConfigBlackList, ";") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if _, ok := props[k]; ok {
			return remoting.NewResponse(req, remoting.NoPermission, "Can not update config in black list.")
		}
	}
	next := s.cfg
	if err := config.UpdateLive(props, &next); err != nil {
		return remoting.NewResponse(req, remoting.InvalidParameter, err.Error())
	}
	s.cfg = next
	s.mu.Lock()
	s.routes.DeleteTopicWithBrokerRegistration = next.DeleteTopicWithBrokerRegistration
	s.mu.Unlock()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.log.Info("name server config updated", "keys", strings.Join(keys, ","))
	return success(req)
}

// systemTopicList answers GET_SYSTEM_TOPIC_LIST_FROM_NS.
func (s *Server) systemTopicList(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	s.mu.RLock()
	l := s.routes.SystemTopics()
	s.mu.RUnlock()
	return topicListResponse(req, l)
}

func (s *Server) flaggedTopics(req *remoting.Command, keep func(int32) bool) *remoting.Command {
	if !s.config().EnableTopicList {
		return remoting.NewResponse(req, remoting.SystemError, "disable")
	}
	s.mu.RLock()
	topics := s.routes.TopicsWithSysFlag(keep)
	s.mu.RUnlock()
	return topicListResponse(req, TopicList{TopicList: topics})
}

// unitTopicList answers GET_UNIT_TOPIC_LIST: topics with the unit flag.
func (s *Server) unitTopicList(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.flaggedTopics(req, func(f int32) bool { return f&TopicSysFlagUnit != 0 })
}

// hasUnitSubTopicList answers GET_HAS_UNIT_SUB_TOPIC_LIST: topics with the
// unit-subscription flag.
func (s *Server) hasUnitSubTopicList(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.flaggedTopics(req, func(f int32) bool { return f&TopicSysFlagUnitSub != 0 })
}

// hasUnitSubUnunitTopicList answers GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST:
// topics with the unit-subscription flag and without the unit flag.
func (s *Server) hasUnitSubUnunitTopicList(_ *transport.Conn, req *remoting.Command) *remoting.Command {
	return s.flaggedTopics(req, func(f int32) bool { return f&TopicSysFlagUnit == 0 && f&TopicSysFlagUnitSub != 0 })
}
