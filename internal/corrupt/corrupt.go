// Package corrupt owns Spool's one corruption marker: ErrCorruption, which
// every error about bytes that cannot be right (a stored record, a commit-log
// file, a consume queue, an index or timer file) matches with errors.Is. A
// package keeps its own sentinel for its text and its tests (store.ErrCorrupt,
// index.ErrCorrupt, timer.ErrCorrupt, message.ErrBadCRC, ...) and makes it
// with New, so that errors.Is matches both the package's sentinel and
// ErrCorruption.
//
// It imports nothing of Spool and must never do: every other package may
// import it.
package corrupt

import "errors"

// ErrCorruption is matched (errors.Is) by every error about corrupt bytes.
var ErrCorruption = errors.New("corruption")

// New returns a sentinel with the text msg that errors.Is matches against
// itself and against ErrCorruption.
func New(msg string) error { return &marker{msg: msg} }

type marker struct{ msg string }

func (m *marker) Error() string { return m.msg }

// Is reports ErrCorruption as a match (identity is checked by errors.Is).
func (m *marker) Is(target error) bool { return target == ErrCorruption }

// Wrap marks err, an error about bytes that cannot be right (a decoder's
// complaint about a metadata file, say), as corruption: the result has err's
// text, unwraps to err and matches ErrCorruption. Wrap(nil) is nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{err: err}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return w.err.Error() }

func (w *wrapped) Unwrap() error { return w.err }

// Is reports ErrCorruption as a match.
func (w *wrapped) Is(target error) bool { return target == ErrCorruption }
