package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// SQL92 selectors deliver exactly the matching messages, with SQL's
// three-valued logic: a comparison with a missing property is unknown, so
// it matches neither the comparison nor its negation.
func TestSemanticsSQL92Selectors(t *testing.T) {
	t.Parallel()
	s := startSpool(t, "enablePropertyFilter=true")
	topic := "E2ESemSQL"
	s.createTopic(t, s.newAdmin(t), topic, 2)

	type msg struct {
		body  string
		tag   string
		props map[string]string
	}
	msgs := []msg{
		{"m-a1-bx", "red", map[string]string{"a": "1", "b": "x"}},
		{"m-a5-by", "blue", map[string]string{"a": "5", "b": "y"}},
		{"m-a6", "red", map[string]string{"a": "6"}},
		{"m-a10-bx", "", map[string]string{"a": "10", "b": "x"}},
		{"m-by", "blue", map[string]string{"b": "y"}},
		{"m-none", "", nil},
		{"m-a-neg-bhello", "red", map[string]string{"a": "-3", "b": "hello world"}},
		{"m-a3-bz", "", map[string]string{"a": "3", "b": "z"}},
	}
	cases := []struct {
		expr string
		want []string
	}{
		{"a > 5", []string{"m-a6", "m-a10-bx"}},
		{"NOT (a > 5)", []string{"m-a1-bx", "m-a5-by", "m-a-neg-bhello", "m-a3-bz"}},
		{"a IS NULL", []string{"m-by", "m-none"}},
		{"a IS NOT NULL AND b IS NULL", []string{"m-a6"}},
		{"a BETWEEN 2 AND 6", []string{"m-a5-by", "m-a6", "m-a3-bz"}},
		{"a NOT BETWEEN 2 AND 6", []string{"m-a1-bx", "m-a10-bx", "m-a-neg-bhello"}},
		{"b IN ('x', 'z')", []string{"m-a1-bx", "m-a10-bx", "m-a3-bz"}},
		{"b NOT IN ('x', 'z')", []string{"m-a5-by", "m-by", "m-a-neg-bhello"}},
		{"b <> 'x'", []string{"m-a5-by", "m-by", "m-a-neg-bhello", "m-a3-bz"}},
		{"b = 'y' OR a = 1", []string{"m-a1-bx", "m-a5-by", "m-by"}},
		{"a < 0 OR (b = 'x' AND a >= 10)", []string{"m-a-neg-bhello", "m-a10-bx"}},
		{"TAGS = 'red' AND a <= 1", []string{"m-a1-bx", "m-a-neg-bhello"}},
		{"b CONTAINS 'ell'", []string{"m-a-neg-bhello"}},
		{"b STARTSWITH 'hel' OR b ENDSWITH 'z'", []string{"m-a-neg-bhello", "m-a3-bz"}},
		{"TRUE", []string{"m-a1-bx", "m-a5-by", "m-a6", "m-a10-bx", "m-by", "m-none", "m-a-neg-bhello", "m-a3-bz"}},
		{"FALSE OR a = 6", []string{"m-a6"}},
	}

	type sub struct {
		group string
		log   *receiptLog
	}
	var subs []sub
	for i, c := range cases {
		g := fmt.Sprintf("cg-sem-sql-%d", i)
		log := newReceiptLog()
		s.startConsumer(t, g, topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: c.expr}, log.handler)
		subs = append(subs, sub{g, log})
	}

	p := s.newProducer(t, "pg-sem-sql")
	for _, m := range msgs {
		pm := primitive.NewMessage(topic, []byte(m.body))
		if m.tag != "" {
			pm.WithTag(m.tag)
		}
		for k, v := range m.props {
			pm.WithProperty(k, v)
		}
		if _, err := p.SendSync(context.Background(), pm); err != nil {
			t.Fatalf("send %s: %v", m.body, err)
		}
	}

	for i, c := range cases {
		sb := subs[i]
		waitFor(t, 60*time.Second, fmt.Sprintf("the matches of %q", c.expr), func() bool { return sb.log.hasAll(c.want) })
		// Once the group has committed the whole topic, the broker has
		// judged every message for it: what was not delivered never will be.
		s.waitCommitted(t, sb.group, topic, 2)
		got := sb.log.counts()
		var gotBodies []string
		for b := range got {
			gotBodies = append(gotBodies, b)
		}
		sort.Strings(gotBodies)
		want := append([]string(nil), c.want...)
		sort.Strings(want)
		if strings.Join(gotBodies, ",") != strings.Join(want, ",") {
			t.Errorf("%q delivered %v, want %v", c.expr, gotBodies, want)
		}
		for b, n := range got {
			if n != 1 {
				t.Errorf("%q delivered %s %d times", c.expr, b, n)
			}
		}
	}
}
