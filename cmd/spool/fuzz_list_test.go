package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestMakeFuzzRunsEveryTarget keeps `make fuzz` honest: the targets it
// runs (make fuzz-list) are exactly the Fuzz functions of the module's
// test files, found here by parsing them.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := "../.."
	var want []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				dir := "./" + filepath.ToSlash(rel)
				if rel == "." {
					dir = "."
				}
				want = append(want, dir+" "+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-s", "-C", root, "fuzz-list").Output()
	if err != nil {
		t.Fatalf("make fuzz-list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	sort.Strings(want)
	sort.Strings(lines)
	if len(want) < 15 {
		t.Fatalf("only %d fuzz targets found: %v", len(want), want)
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("make fuzz-list:\n%s\nFuzz functions:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
