package layering

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/spoolmq/spool/"

// allowed lists, for every package of the module, the module packages its
// non-test files may import. A package missing from the table fails the
// test: a new package states its place when it is added. "*" allows any
// package of the module (the wiring and the command).
var allowed = map[string][]string{
	"internal/corrupt":              {},
	"message":                       {"internal/corrupt"},
	"remoting":                      {},
	"remoting/transport":            {"remoting"},
	"internal/clock":                {},
	"internal/systopic":             {},
	"internal/delaylevel":           {},
	"internal/config":               {},
	"internal/vfs":                  {"internal/clock"},
	"internal/filter":               {"internal/corrupt", "message"},
	"internal/store/stats":          {"internal/clock"},
	"internal/store/index":          {"internal/corrupt", "internal/vfs", "internal/clock"},
	"internal/store":                {"internal/corrupt", "internal/systopic", "internal/delaylevel", "message", "internal/vfs", "internal/clock", "internal/store/index", "internal/store/stats"},
	"internal/timer":                {"internal/corrupt", "internal/systopic", "message", "remoting", "internal/vfs", "internal/clock", "internal/store", "internal/store/stats"},
	"internal/namesrv":              {"internal/corrupt", "remoting", "remoting/transport", "internal/clock", "internal/config"},
	"internal/metadata":             {"internal/clock", "internal/corrupt"},
	"internal/adminbody":            {"internal/metadata", "internal/store/stats"},
	"internal/brokerstats":          {"internal/clock"},
	"internal/metrics":              {},
	"internal/console":              {},
	"internal/mempolicy":            {},
	"internal/clients":              {"internal/clock", "internal/filter", "internal/store", "message", "remoting", "remoting/transport"},
	"internal/transaction":          {"internal/clock", "internal/corrupt", "internal/metadata", "internal/store", "internal/systopic", "message", "remoting"},
	"internal/schedule":             {"internal/corrupt", "internal/metadata", "internal/store", "message"},
	"internal/longpoll":             {"remoting/transport"},
	"internal/processor":            {"internal/adminbody", "internal/brokerstats", "internal/clients", "internal/clock", "internal/ctlbody", "internal/metadata", "internal/store", "message", "remoting", "remoting/transport"},
	"internal/datapath":             {"internal/clients", "internal/clock", "internal/longpoll", "internal/metadata", "internal/processor", "internal/schedule", "internal/store", "internal/systopic", "internal/timer", "internal/transaction", "message", "remoting", "remoting/transport"},
	"internal/auth":                 {"internal/corrupt", "internal/vfs", "remoting"},
	"internal/auth/aclv1":           {"internal/auth", "remoting"},
	"internal/authserve":            {"internal/auth", "internal/auth/aclv1", "internal/vfs", "remoting", "remoting/transport"},
	"internal/controller/replicas":  {"remoting"},
	"internal/controller/liveness":  {"internal/clock", "internal/controller/replicas"},
	"internal/controller/consensus": {"internal/controller/replicas"},
	"internal/ctlbody":              {},
	"internal/controller":           {"internal/clock", "internal/controller/replicas", "internal/ctlbody", "internal/controller/liveness", "internal/controller/consensus", "remoting", "remoting/transport"},
	"internal/ha":                   {"internal/clock"},
	"internal/failover":             {"internal/clock", "internal/ctlbody", "internal/vfs", "remoting", "remoting/transport"},
	"internal/tlsconf":              {"internal/config", "internal/clock"},
	"internal/broker":               {"*"},
	"internal/testkit":              {"internal/clock", "internal/store"},
	"internal/testkit/faultproxy":   {},
	"internal/testkit/brokerkit":    {"*"},
	"internal/layering":             {},
	"cmd/spool":                     {"*"},
	"bench/redisdrain":              {},
	"test/e2e":                      {"*"},
	"test/incidents":                {"*"},
	"test/failover":                 {"*"},
	"test/failover/check":           {},
}

// onlyTests are packages that no non-test file may import.
var onlyTests = []string{"internal/testkit", "internal/testkit/brokerkit", "internal/testkit/faultproxy"}

// wiring is the package that builds a broker from the others; only the
// command (and the shared test set-ups) may import it, whatever their
// rows allow.
const wiring = "internal/broker"

var wiringImporters = map[string]bool{"cmd/spool": true, "internal/testkit/brokerkit": true}

// mayImport applies a package's row and the wiring rule to one import.
func mayImport(pkg, imp string) bool {
	if imp == wiring && !wiringImporters[pkg] {
		return false
	}
	return permits(allowed[pkg], imp)
}

func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", dir, err)
	}
	return dir
}

// packages returns every package directory of the module with the module
// packages its non-test files import.
func packages(t *testing.T, root string) map[string][]string {
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		var mine []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				mine = append(mine, strings.TrimPrefix(imp, module))
			}
		}
		sort.Strings(mine)
		out[rel] = mine
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportsFollowTheLayering(t *testing.T) {
	pkgs := packages(t, moduleRoot(t))
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages: %v", len(pkgs), pkgs)
	}
	for pkg, imports := range pkgs {
		rule, ok := allowed[pkg]
		if !ok {
			t.Errorf("%s has no entry in the layering table (internal/layering and docs/design.md)", pkg)
			continue
		}
		for _, imp := range imports {
			for _, only := range onlyTests {
				if imp == only && !slices.Contains(onlyTests, pkg) { // the kits build on each other
					t.Errorf("%s imports %s, which only tests may import", pkg, imp)
				}
			}
			if imp == wiring && !wiringImporters[pkg] {
				t.Errorf("%s imports %s, the wiring, which only cmd/spool may import", pkg, imp)
			} else if !permits(rule, imp) {
				t.Errorf("%s imports %s; it may import only %v", pkg, imp, rule)
			}
		}
	}
}

func permits(rule []string, imp string) bool {
	for _, r := range rule {
		if r == "*" || r == imp {
			return true
		}
	}
	return false
}

// TestPermits keeps the checker honest: a forbidden import is reported.
func TestPermits(t *testing.T) {
	if permits(allowed["internal/store"], "internal/broker") {
		t.Fatal("the store may not import the broker")
	}
	if permits(allowed["message"], "remoting") {
		t.Fatal("message imports nothing of the module")
	}
	if !mayImport("cmd/spool", "internal/broker") {
		t.Fatal("the command wires the broker")
	}
	for _, pkg := range []string{"test/e2e", "internal/metadata", "internal/clients", "internal/transaction", "internal/schedule"} {
		if mayImport(pkg, "internal/broker") {
			t.Fatalf("%s may not import the wiring", pkg)
		}
	}
	if mayImport("internal/metadata", "internal/store") || mayImport("internal/clients", "internal/metadata") {
		t.Fatal("the broker's parts import only their rows")
	}
}
