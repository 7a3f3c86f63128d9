package ha

// Log is the CommitLog as replication sees it. The store implements it;
// the master reads from it and the slave appends to it.
type Log interface {
	// MaxOffset is the end of the log: on a master the end of the
	// readable records, on a slave the end of the bytes appended so far
	// (which may end inside a record).
	MaxOffset() int64
	// AckOffset is what a slave reports to its master as acknowledged:
	// the end of the appended bytes that survive a process crash (not
	// those still only in memory, waiting for their CommitLog file). At
	// most MaxOffset; it never moves backwards.
	AckOffset() int64
	// MinOffset is the first offset still kept.
	MinOffset() int64
	// ReadAt copies committed CommitLog bytes starting at offset into dst
	// and returns how many it copied: at most len(dst), never past the
	// readable end nor past the end of the CommitLog file holding offset.
	// It takes no lock a flush, a checkpoint or a metadata write holds,
	// and never waits for an fsync. 0 means nothing new.
	ReadAt(dst []byte, offset int64) (int, error)
	// AppendReplicated appends b, the master's bytes at offset, to the
	// slave's log. offset must equal the log's end (a *MismatchError
	// otherwise); b never crosses a CommitLog file.
	AppendReplicated(offset int64, b []byte) error
}
