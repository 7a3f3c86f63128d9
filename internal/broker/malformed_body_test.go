package broker

import (
	"strings"
	"testing"

	"github.com/spoolmq/spool/remoting"
)

func TestMalformedBodies(t *testing.T) {
	e := startBroker(t, nil)
	for _, code := range []int32{remoting.HeartBeat, remoting.CheckClientConfig, remoting.LockBatchMQ, remoting.UpdateAndCreateSubscriptionGroup} {
		r := e.invoke(goRequest(code, nil, []byte("{not json")))
		if r.Code == remoting.Success || !strings.Contains(r.Remark, "bad request body") {
			t.Errorf("%s with a broken body: code %d remark %q", remoting.RequestName(code), r.Code, r.Remark)
		}
	}
}
