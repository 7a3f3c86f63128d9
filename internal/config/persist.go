package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// UpdateFile writes the keys of set into the .properties file at path, the
// way an operator would edit it: the logical line of each key is replaced
// in place (a repeated key keeps one line, its first), keys the file lacks
// are appended in key order, and every other line, comments included, is
// kept as it was. A missing file (or directory) is created. The previous
// content is kept in path.bak, as RocketMQ keeps it; the new content
// replaces the file atomically (temporary file, fsync, rename, fsync of
// the directory), so a crash leaves the old or the new file, never a torn
// one.
func UpdateFile(path string, set map[string]string) error {
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read config %s: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	next := rewriteProperties(old, set)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("config dir %s: %w", dir, err)
	}
	if exists {
		if err := writeAtomic(path+".bak", old, mode); err != nil {
			return err
		}
	}
	return writeAtomic(path, next, mode)
}

// rewriteProperties is UpdateFile's text transformation.
func rewriteProperties(old []byte, set map[string]string) []byte {
	var out strings.Builder
	done := make(map[string]bool, len(set))
	lines := splitNaturalLines(old)
	for i := 0; i < len(lines); i++ {
		start := i
		line := trimLeftSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			out.WriteString(lines[i])
			out.WriteByte('\n')
			continue
		}
		// The same continuation rule as ParseProperties.
		var logical strings.Builder
		for endsWithOddBackslashes(line) && i+1 < len(lines) {
			logical.WriteString(line[:len(line)-1])
			i++
			line = trimLeftSpace(lines[i])
		}
		logical.WriteString(line)
		if k, _, err := parseLogicalLine(logical.String()); err == nil {
			if v, ok := set[k]; ok {
				if !done[k] {
					out.WriteString(formatProperty(k, v))
					done[k] = true
				}
				continue
			}
		}
		for j := start; j <= i; j++ {
			out.WriteString(lines[j])
			out.WriteByte('\n')
		}
	}
	var missing []string
	for k := range set {
		if !done[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	for _, k := range missing {
		out.WriteString(formatProperty(k, set[k]))
	}
	return []byte(out.String())
}

// formatProperty renders one "key=value\n" line that ParseProperties reads
// back as key and value.
func formatProperty(k, v string) string {
	return escapeProperty(k, true) + "=" + escapeProperty(v, false) + "\n"
}

func escapeProperty(s string, key bool) string {
	var b strings.Builder
	last := len(s) - 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			// Blanks end a key, and the reader drops a value's leading
			// and trailing ones.
			if key || i == 0 || i == last {
				b.WriteString(`\ `)
			} else {
				b.WriteByte(c)
			}
		case '=', ':', '#', '!':
			if key || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write config %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write config %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write config %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write config %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync config dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync config dir %s: %w", dir, err)
	}
	return nil
}
