package ledger

import "errors"

var (
	// ErrConflict: a compare-and-set found the row not in the expected state
	// (another writer, perhaps another process, moved it first).
	ErrConflict = errors.New("ledger: conflict: row is not in the expected state")
	// ErrNotFound: no row has that id.
	ErrNotFound = errors.New("ledger: not found")
	// ErrClosed: the Ledger was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrUnsafe is matched (errors.Is) by every refusal to open a file,
	// directory, schema or connection that is not safe to use. The error's
	// text says what is wrong and how to fix it.
	ErrUnsafe = errors.New("ledger: refusing unsafe database")
)

// refusal is an error whose text is a complete, actionable message and which
// matches ErrUnsafe.
type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == ErrUnsafe }

func refuse(msg string) error { return &refusal{msg: msg} }
