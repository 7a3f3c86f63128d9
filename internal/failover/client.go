package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spoolmq/spool/internal/ctlbody"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// errNoLeader: no controller named a leader.
var errNoLeader = errors.New("no controller names a leader")

// codeError is a controller's answer other than SUCCESS.
type codeError struct {
	code   int32
	remark string
}

func (e *codeError) Error() string {
	return fmt.Sprintf("controller answered %d (%s)", e.code, e.remark)
}

func isCode(err error, code int32) bool {
	var ce *codeError
	return errors.As(err, &ce) && ce.code == code
}

// controllers is the client of the controller group: the configured
// addresses and the leader last learned from GET_CONTROLLER_METADATA_INFO
// or a NOT_LEADER answer.
type controllers struct {
	cl      *transport.Client
	addrs   []string
	timeout time.Duration

	mu     sync.Mutex
	leader string
}

func (c *controllers) leaderAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *controllers) setLeader(a string) {
	c.mu.Lock()
	c.leader = a
	c.mu.Unlock()
}

func (c *controllers) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.cl.Invoke(ctx, addr, req)
}

// refreshLeader asks the controllers in turn which one leads (the answer
// of the leader itself is preferred) and records it.
func (c *controllers) refreshLeader(ctx context.Context) (string, error) {
	var named string
	var errs []error
	for _, addr := range c.addrs {
		resp, err := c.invoke(ctx, addr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if resp.Code != remoting.Success {
			errs = append(errs, fmt.Errorf("%s: %w", addr, &codeError{resp.Code, resp.Remark}))
			continue
		}
		if strings.EqualFold(resp.Ext("isLeader"), "true") {
			c.setLeader(addr)
			return addr, nil
		}
		if l := resp.Ext("controllerLeaderAddress"); l != "" && named == "" {
			named = l
		}
	}
	if named != "" {
		c.setLeader(named)
		return named, nil
	}
	return "", errors.Join(append([]error{errNoLeader}, errs...)...)
}

// callLeader sends a request built by mk to the leader, learning the
// leader first when none is known, and once more after a NOT_LEADER
// answer or a failed call. A non-SUCCESS answer is a *codeError.
func (c *controllers) callLeader(ctx context.Context, mk func() *remoting.Command) (*remoting.Command, error) {
	var last error
	for try := 0; try < 2; try++ {
		leader := c.leaderAddr()
		if leader == "" || try > 0 {
			var err error
			if leader, err = c.refreshLeader(ctx); err != nil {
				return nil, err
			}
		}
		resp, err := c.invoke(ctx, leader, mk())
		if err != nil {
			last = fmt.Errorf("controller %s: %w", leader, err)
			continue
		}
		if resp.Code == remoting.ControllerNotLeader {
			last = fmt.Errorf("controller %s: %w", leader, &codeError{resp.Code, resp.Remark})
			continue
		}
		if resp.Code != remoting.Success {
			return resp, &codeError{resp.Code, resp.Remark}
		}
		return resp, nil
	}
	return nil, last
}

// headerInt64 reads a numeric header field; absent or "null" is def.
func headerInt64(resp *remoting.Command, k string, def int64) (int64, error) {
	v := strings.TrimSpace(resp.Ext(k))
	if v == "" || v == "null" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s=%q: %w", k, v, err)
	}
	return n, nil
}

// viewOf reads the master fields of an answer or push and its body: a
// SyncStateSet body (withSetEpochInBody) or an ElectMasterResponseBody
// with the set's epoch in the header.
func viewOf(resp *remoting.Command, electAnswer bool) (View, error) {
	var v View
	id, err := headerInt64(resp, "masterBrokerId", 0)
	if err != nil {
		return v, err
	}
	epoch, err := headerInt64(resp, "masterEpoch", 0)
	if err != nil {
		return v, err
	}
	setEpoch, err := headerInt64(resp, "syncStateSetEpoch", 0)
	if err != nil {
		return v, err
	}
	v = View{MasterID: id, MasterAddr: resp.Ext("masterAddress"), MasterEpoch: int32(epoch), SyncStateSetEpoch: int32(setEpoch)}
	if len(resp.Body) == 0 {
		return v, nil
	}
	if electAnswer {
		var b ctlbody.ElectMasterResponseBody
		if err := json.Unmarshal(resp.Body, &b); err != nil {
			return v, fmt.Errorf("ElectMasterResponseBody: %w", err)
		}
		v.SyncStateSet = b.SyncStateSet
		return v, nil
	}
	var b ctlbody.SyncStateSet
	if err := json.Unmarshal(resp.Body, &b); err != nil {
		return v, fmt.Errorf("SyncStateSet body: %w", err)
	}
	v.SyncStateSet = b.SyncStateSet
	if b.SyncStateSetEpoch != 0 {
		v.SyncStateSetEpoch = b.SyncStateSetEpoch
	}
	return v, nil
}
