package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spoolmq/spool/internal/metadata"
	"github.com/spoolmq/spool/internal/vfs"
)

// A slave notes the consumer offsets its own consumers commit on it
// (metadata's ledger of local commits): the note decides which offsets it
// hands its master with UPDATE_CONSUMER_OFFSET (pushLocalOffsets). The
// note is kept in the store's config directory, in commitNoteFile, so a
// slave restarted while its master is down still hands them back. It is
// written through the store's file system (temp file, fsync, rename) when
// it changed, every flushConsumerOffsetInterval as consumerOffset.json is,
// and when the broker stops; it is read back when a slave starts.

// commitNoteFile is the note's file name in storePathRootDir/config.
const commitNoteFile = "slaveConsumerOffset.json"

// commitNoteEntry is one queue's noted offset.
type commitNoteEntry struct {
	Topic   string `json:"topic"`
	Group   string `json:"group"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
}

// commitNoteDoc is the file's JSON document.
type commitNoteDoc struct {
	Offsets []commitNoteEntry `json:"offsets"`
}

func encodeCommitNote(note map[metadata.OffsetKey]int64) ([]byte, error) {
	doc := commitNoteDoc{Offsets: make([]commitNoteEntry, 0, len(note))}
	for k, off := range note {
		doc.Offsets = append(doc.Offsets, commitNoteEntry{Topic: k.Topic, Group: k.Group, QueueID: k.QueueID, Offset: off})
	}
	sort.Slice(doc.Offsets, func(i, j int) bool {
		a, b := doc.Offsets[i], doc.Offsets[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.QueueID < b.QueueID
	})
	return json.MarshalIndent(&doc, "", "\t")
}

func decodeCommitNote(b []byte) (map[metadata.OffsetKey]int64, error) {
	var doc commitNoteDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	note := make(map[metadata.OffsetKey]int64, len(doc.Offsets))
	for _, e := range doc.Offsets {
		if e.Topic == "" || e.Group == "" {
			return nil, fmt.Errorf("an entry without topic or group: %+v", e)
		}
		note[metadata.OffsetKey{Topic: e.Topic, Group: e.Group, QueueID: e.QueueID}] = e.Offset
	}
	return note, nil
}

func (b *Broker) commitNotePath() string {
	return filepath.Join(b.storeConfig().StorePathRootDir, "config", commitNoteFile)
}

// loadCommitNote reads the note back into the ledger (a slave, at
// start). A missing file is an empty note; an unreadable one is logged
// and ignored: the slave then hands back only what is committed from now
// on, as before the note was kept.
func (b *Broker) loadCommitNote() {
	path := b.commitNotePath()
	body, err := readWholeFile(b.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var note map[metadata.OffsetKey]int64
	if err == nil {
		note, err = decodeCommitNote(body)
	}
	if err != nil {
		b.logger.Warn("slave: the note of offsets committed here is unreadable; ignored", "file", path, "err", err)
		return
	}
	b.offsets.RestoreLocalCommits(note)
	if len(note) > 0 {
		b.logger.Info("slave: offsets committed here while the master was away, to hand back", "file", path, "count", len(note))
	}
}

// runCommitNote writes the note when it changed since the ledger's
// version saved (what is on disk), every interval and once more when the
// broker stops.
func (b *Broker) runCommitNote(interval time.Duration, saved uint64) {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			b.saveCommitNote(&saved)
			return
		case <-t.C:
			b.saveCommitNote(&saved)
		}
	}
}

// saveCommitNote writes the note if it changed since version *saved.
func (b *Broker) saveCommitNote(saved *uint64) {
	note, v := b.offsets.LocalCommitsVersion()
	if v == *saved {
		return
	}
	body, err := encodeCommitNote(note)
	if err == nil {
		path := b.commitNotePath()
		if err = b.fs.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = vfs.WriteFileAtomic(b.fs, path, body, nil)
		}
	}
	if err != nil {
		// Kept in memory: written again on the next round.
		b.logger.Error("slave: persist the note of offsets committed here", "err", err)
		return
	}
	*saved = v
}

// readWholeFile reads a small file through fsys.
func readWholeFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if m, err := f.ReadAt(buf, 0); err != nil && m != len(buf) {
		return nil, err
	}
	return buf, nil
}
