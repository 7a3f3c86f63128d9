package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dashboardPath = "../../docs/grafana/spool.json"

var metricName = regexp.MustCompile(`\b(?:rocketmq|spool)_[a-z0-9_]+\b`)

// referencedNames returns every rocketmq_ or spool_ name in the
// dashboard's queries (targets' expr, variables' query and definition).
func referencedNames(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					out = append(out, metricName.FindAllString(s, -1)...)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// unknownNames returns the names that are neither a family nor a
// histogram family's _bucket, _sum or _count series.
func unknownNames(refs []string) []string {
	kinds := map[string]string{}
	for _, f := range families {
		kinds[f.name] = f.kind
	}
	var bad []string
	for _, n := range refs {
		if _, ok := kinds[n]; ok {
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && kinds[base] == "histogram" {
				found = true
			}
		}
		if !found && !slices.Contains(bad, n) {
			bad = append(bad, n)
		}
	}
	return bad
}

func TestDashboardUsesOnlyExposedMetrics(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	refs := referencedNames(dash)
	if len(refs) < 30 {
		t.Fatalf("only %d metric references found", len(refs))
	}
	if bad := unknownNames(refs); len(bad) > 0 {
		t.Fatalf("the dashboard names metrics that are not exposed: %v", bad)
	}
	// Every panel of the dashboard has a query.
	for _, p := range dash["panels"].([]any) {
		pm := p.(map[string]any)
		if pm["type"] == "row" {
			continue
		}
		if ts, _ := pm["targets"].([]any); len(ts) == 0 {
			t.Errorf("panel %v has no query", pm["title"])
		}
	}
}

func TestUnknownNamesCatchesMisspellings(t *testing.T) {
	got := unknownNames([]string{"rocketmq_messages_in_total", "rocketmq_message_size_bucket", "rocketmq_topic_number_sum",
		"rocketmq_mesages_in_total", "spool_fsync_latency_seconds_count"})
	if !slices.Equal(got, []string{"rocketmq_topic_number_sum", "rocketmq_mesages_in_total"}) {
		t.Fatalf("got %v", got)
	}
}
