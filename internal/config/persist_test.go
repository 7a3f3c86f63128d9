package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestUpdateFileKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.conf")
	orig := "# operator's comment\n" +
		"brokerName = broker-a\n" +
		"flushIntervalCommitLog=500\n" +
		"messageDelayLevel = 1s 5s \\\n" +
		"    10s\n" +
		"! another comment\n" +
		"flushIntervalCommitLog=700\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	set := map[string]string{"flushIntervalCommitLog": "200", "messageDelayLevel": "2s 3s", "deleteWhen": "04;16", "regionId": " a\\b:c "}
	if err := UpdateFile(path, set); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# operator's comment\n" +
		"brokerName = broker-a\n" +
		"flushIntervalCommitLog=200\n" +
		"messageDelayLevel=2s 3s\n" +
		"! another comment\n" +
		"deleteWhen=04;16\n" +
		"regionId=\\ a\\\\b:c\\ \n"
	if string(got) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	props, err := ParseProperties(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	wantProps := map[string]string{"brokerName": "broker-a"}
	for k, v := range set {
		wantProps[k] = v
	}
	if !reflect.DeepEqual(props, wantProps) {
		t.Fatalf("read back %v, want %v", props, wantProps)
	}
	bak, err := os.ReadFile(path + ".bak")
	if err != nil || string(bak) != orig {
		t.Fatalf("backup %q, %v", bak, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestUpdateFileCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "broker.properties")
	if err := UpdateFile(path, map[string]string{"b": "2", "a": "1"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "a=1\nb=2\n" {
		t.Fatalf("%q", got)
	}
	if _, err := os.Stat(path + ".bak"); !os.IsNotExist(err) {
		t.Fatalf("backup of a file that did not exist: %v", err)
	}
}

func FuzzFormatProperty(f *testing.F) {
	for _, s := range []string{"v", " lead", "trail ", "a=b", "#x", "\\", "x\ny", "é"} {
		f.Add("key", s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		if k == "" {
			return
		}
		props, err := ParseProperties(bytes.NewReader([]byte(formatProperty(k, v))))
		if err != nil {
			t.Fatal(err)
		}
		if len(props) != 1 || props[k] != v {
			t.Fatalf("%q=%q read back as %q", k, v, props)
		}
	})
}
