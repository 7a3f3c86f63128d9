package layering

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The README's request-code lists lie between these lines.
const (
	readmeCodesBegin = "<!-- request code lists: checked by internal/layering's TestREADMERequestCodes -->"
	readmeCodesEnd   = "<!-- end of request code lists -->"
)

// The lists' titles, in the README's words.
const (
	listBroker     = "Answered by the broker"
	listNamesrv    = "Answered by the name server"
	listController = "Answered by `spool controller`"
	listSent       = "Sent by Spool to clients or brokers"
	listRefused    = "Refused"
)

var (
	listTitle = regexp.MustCompile(`\*\*([^*]+)\*\* \((\d+)\):`)
	listEntry = regexp.MustCompile("`(\\d+)`\\s+([A-Z0-9_]+)")
)

// readmeCodeLists reads the README's lists: title -> code -> name.
func readmeCodeLists(t *testing.T, root string) map[string]map[int]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, readmeCodesBegin), strings.Index(s, readmeCodesEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no request-code lists between %q and %q", readmeCodesBegin, readmeCodesEnd)
	}
	s = s[i+len(readmeCodesBegin) : j]
	out := map[string]map[int]string{}
	titles := listTitle.FindAllStringSubmatchIndex(s, -1)
	for k, m := range titles {
		title := s[m[2]:m[3]]
		count, _ := strconv.Atoi(s[m[4]:m[5]])
		end := len(s)
		if k+1 < len(titles) {
			end = titles[k+1][0]
		}
		list := map[int]string{}
		for _, e := range listEntry.FindAllStringSubmatch(s[m[1]:end], -1) {
			code, _ := strconv.Atoi(e[1])
			if _, dup := list[code]; dup {
				t.Errorf("README %s lists %d twice", title, code)
			}
			list[code] = e[2]
		}
		if len(list) != count {
			t.Errorf("README %s says (%d) and lists %d codes", title, count, len(list))
		}
		out[title] = list
	}
	for _, title := range []string{listBroker, listNamesrv, listController, listSent, listRefused} {
		if out[title] == nil {
			t.Fatalf("README has no list %q", title)
		}
	}
	return out
}

// controllerCodes reads the request codes of internal/controller's Codes
// (every one of them is registered by Controller.Register).
func controllerCodes(t *testing.T, root string, codes map[string][2]string) map[int]string {
	t.Helper()
	files := parseDir(t, filepath.Join(root, "internal/controller"))
	out := map[int]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "Codes" || len(vs.Values) != 1 {
				return true
			}
			ast.Inspect(vs.Values[0], func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.X.(*ast.Ident).Name == "remoting" {
					c, ok := codes[sel.Sel.Name]
					if !ok {
						t.Fatalf("controller code %s not in remoting/codes.go", sel.Sel.Name)
					}
					code, _ := strconv.Atoi(c[0])
					out[code] = c[1]
				}
				return true
			})
			return false
		})
	}
	if len(out) == 0 {
		t.Fatal("no controller codes read")
	}
	return out
}

func sameCodes(t *testing.T, what string, readme, registered map[int]string) {
	t.Helper()
	var missing, extra []string
	for c, n := range registered {
		if rn, ok := readme[c]; !ok {
			missing = append(missing, strconv.Itoa(c)+" "+n)
		} else if rn != n {
			t.Errorf("README %s names %d %s; the code is %s", what, c, rn, n)
		}
	}
	for c, n := range readme {
		if _, ok := registered[c]; !ok {
			extra = append(extra, strconv.Itoa(c)+" "+n)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("README %s lacks registered codes: %s", what, strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("README %s lists codes nothing registers: %s", what, strings.Join(extra, ", "))
	}
}

// TestREADMERequestCodes: the README's lists of answered codes are
// exactly what the broker, the name server and the controller register;
// no refused code is registered anywhere; every request code remoting
// names is in some list under its name.
func TestREADMERequestCodes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	codes := requestCodes(t, root)
	lists := readmeCodeLists(t, root)
	toMap := func(rows []codeRow) map[int]string {
		m := map[int]string{}
		for _, r := range rows {
			m[r.code] = r.name
		}
		return m
	}
	broker, namesrv := toMap(brokerRows(t, root, codes)), toMap(namesrvRows(t, root, codes))
	ctl := controllerCodes(t, root, codes)
	sameCodes(t, listBroker, lists[listBroker], broker)
	sameCodes(t, listNamesrv, lists[listNamesrv], namesrv)
	sameCodes(t, listController, lists[listController], ctl)
	for c, n := range lists[listRefused] {
		for what, m := range map[string]map[int]string{listBroker: broker, listNamesrv: namesrv, listController: ctl, listSent: lists[listSent]} {
			if _, ok := m[c]; ok {
				t.Errorf("README refuses %d %s, but it is in %q", c, n, what)
			}
		}
	}
	for goName, c := range codes {
		if c[1] == "" {
			continue // a response code
		}
		code, _ := strconv.Atoi(c[0])
		found := false
		for title, m := range lists {
			if n, ok := m[code]; ok {
				found = true
				if n != c[1] {
					t.Errorf("README %s names %d %s; remoting names it %s", title, code, n, c[1])
				}
			}
		}
		if !found {
			t.Errorf("request code %s (%d %s) is in no README list", goName, code, c[1])
		}
	}
}
