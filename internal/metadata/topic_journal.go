package metadata

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// topicJournal is config/topics.journal: the topic changes made since the
// last write of topics.json, one JSON object a line, fsynced before the
// request that made a change is answered. Rewriting topics.json (the whole
// table) for every creation would make creation cost grow with the table;
// an append costs the same at any size. topics.json is still written in
// the background, coalesced; once a write holds every journaled change the
// journal is emptied. At load, the journal's changes newer than
// topics.json's data version are applied in version order; a torn last
// line (a crash during an append that was never acknowledged) is skipped.
//
//	{"dataVersion":{...},"topicConfig":{...}}     created or updated
//	{"dataVersion":{...},"deleted":"TopicName"}   deleted
type topicJournal struct {
	path string

	mu     sync.Mutex
	fh     *os.File
	newest int64 // counter of the newest appended change
}

// TopicChange is one journal line.
type TopicChange struct {
	DataVersion DataVersion  `json:"dataVersion"`
	TopicConfig *TopicConfig `json:"topicConfig,omitempty"`
	Deleted     string       `json:"deleted,omitempty"`
}

func newTopicJournal(path string) *topicJournal { return &topicJournal{path: path} }

// Append writes changes and fsyncs the journal.
func (j *topicJournal) Append(changes []TopicChange) error {
	var buf bytes.Buffer
	for i := range changes {
		b, err := json.Marshal(&changes[i])
		if err != nil {
			return fmt.Errorf("%w: encode %s: %w", ErrMetadata, j.path, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fh == nil {
		fh, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%w: open %s: %w", ErrMetadata, j.path, err)
		}
		// The file's directory entry must be durable before a change in
		// it is acknowledged.
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			fh.Close()
			return fmt.Errorf("%w: %w", ErrMetadata, err)
		}
		j.fh = fh
	}
	if _, err := j.fh.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrMetadata, j.path, err)
	}
	if err := j.fh.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %w", ErrMetadata, j.path, err)
	}
	for i := range changes {
		j.newest = max(j.newest, changes[i].DataVersion.Counter)
	}
	return nil
}

// covered is called after topics.json was written with the table at data
// version counter: when that holds every journaled change, the journal is
// emptied.
func (j *topicJournal) covered(counter int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.newest > counter {
		return nil
	}
	if j.fh == nil {
		fh, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: open %s: %w", ErrMetadata, j.path, err)
		}
		j.fh = fh
	}
	if err := j.fh.Truncate(0); err != nil {
		return fmt.Errorf("%w: truncate %s: %w", ErrMetadata, j.path, err)
	}
	if err := j.fh.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %w", ErrMetadata, j.path, err)
	}
	return nil
}

func (j *topicJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fh == nil {
		return nil
	}
	err := j.fh.Close()
	j.fh = nil
	return err
}

// read returns the journal's changes newer than counter, in version order,
// and how many torn lines it skipped.
func (j *topicJournal) read(counter int64) ([]TopicChange, int, error) {
	data, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read %s: %w", ErrMetadata, j.path, err)
	}
	var out []TopicChange
	torn := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c TopicChange
		if err := json.Unmarshal(line, &c); err != nil || (c.TopicConfig == nil && c.Deleted == "") {
			torn++
			continue
		}
		if c.DataVersion.Counter > counter {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].DataVersion.Counter < out[b].DataVersion.Counter })
	j.newest = 0
	if len(out) > 0 {
		j.newest = out[len(out)-1].DataVersion.Counter
	}
	return out, torn, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
