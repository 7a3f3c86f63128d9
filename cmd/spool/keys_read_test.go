package main

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spoolmq/spool/internal/broker"
	"github.com/spoolmq/spool/internal/controller"
	"github.com/spoolmq/spool/internal/namesrv"
	"github.com/spoolmq/spool/internal/store"
)

const modulePath = "github.com/spoolmq/spool"

// boundField is a prop-tagged field: the key and where it is declared.
type boundField struct{ pkg, typ, field string }

// boundFields walks a configuration struct (and the untagged struct fields
// it holds) and maps each declaring field to its key.
func boundFields(t reflect.Type, out map[boundField]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if k := f.Tag.Get("prop"); k != "" && k != "-" {
			out[boundField{t.PkgPath(), t.Name(), f.Name}] = k
		} else if f.Type.Kind() == reflect.Struct {
			boundFields(f.Type, out)
		}
	}
}

// TestEverySupportedKeyIsRead fails when a supported key's field is read
// nowhere outside configuration binding and tests: a key the README lists
// as supported must change what Spool does. It type-checks every package
// of the module (go/types, with dependencies from the build cache's export
// data) and records each field selection that is not the target of an
// assignment.
func TestEverySupportedKeyIsRead(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	fields := map[boundField]string{}
	for _, cfg := range []any{broker.DefaultConfig(), store.DefaultConfig(), namesrv.DefaultConfig(), controller.DefaultConfig()} {
		boundFields(reflect.TypeOf(cfg), fields)
	}
	if len(fields) < 100 {
		t.Fatalf("only %d bound fields found", len(fields))
	}

	cmd := exec.Command("go", "list", "-export", "-deps",
		"-f", "{{.ImportPath}}\t{{.Export}}\t{{if .Module}}{{.Module.Path}}{{end}}\t{{.Dir}}\t{{join .GoFiles \",\"}}",
		modulePath+"/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	type pkg struct {
		path, dir string
		files     []string
	}
	var ours []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 5 {
			continue
		}
		exports[p[0]] = p[1]
		if p[2] != modulePath || p[4] == "" || p[0] == modulePath+"/internal/config" ||
			strings.HasPrefix(p[0], modulePath+"/test/") {
			continue
		}
		ours = append(ours, pkg{p[0], p[3], strings.Split(p[4], ",")})
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	read := map[boundField]bool{}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.files {
			f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.path, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.path, err)
		}
		written := map[*ast.SelectorExpr]bool{}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok {
					for _, l := range as.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok {
							written[s] = true
						}
					}
				}
				return true
			})
		}
		for sel, s := range info.Selections {
			if s.Kind() != types.FieldVal || written[sel] {
				continue
			}
			if bf, ok := declaringField(s); ok {
				read[bf] = true
			}
		}
	}
	for bf, key := range fields {
		if !read[bf] {
			t.Errorf("supported key %s (%s.%s.%s) is read nowhere outside binding and tests: implement it or leave it to the not-built keys",
				key, bf.pkg, bf.typ, bf.field)
		}
	}
}

// declaringField names the struct type that declares a selected field,
// following promotion through embedded fields.
func declaringField(s *types.Selection) (boundField, bool) {
	t := s.Recv()
	idx := s.Index()
	for i, n := range idx {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, _ := t.(*types.Named)
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			return boundField{}, false
		}
		f := st.Field(n)
		if i == len(idx)-1 {
			if named == nil || named.Obj().Pkg() == nil {
				return boundField{}, false
			}
			return boundField{named.Obj().Pkg().Path(), named.Obj().Name(), f.Name()}, true
		}
		t = f.Type()
	}
	return boundField{}, false
}
