package auth

import (
	"errors"

	"github.com/spoolmq/spool/internal/corrupt"
)

// Errors of the package; match them with errors.Is.
var (
	// ErrInvalid: a name, a resource, an action, a decision or a body
	// that RocketMQ's model does not accept.
	ErrInvalid = errors.New("auth: invalid")
	// ErrUnauthenticated: a request without an AccessKey.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	// ErrUnknownUser: the AccessKey names no user.
	ErrUnknownUser = errors.New("auth: unknown user")
	// ErrDisabledUser: the user is disabled.
	ErrDisabledUser = errors.New("auth: user disabled")
	// ErrSignature: the signature is missing or wrong.
	ErrSignature = errors.New("auth: bad signature")
	// ErrExists: creating a user or an ACL that exists.
	ErrExists = errors.New("auth: already exists")
	// ErrNotFound: changing or deleting a user or an ACL that does not
	// exist.
	ErrNotFound = errors.New("auth: not found")
	// ErrCorrupt: a store file that cannot be what Spool wrote; it
	// matches corrupt.ErrCorruption too.
	ErrCorrupt = corrupt.New("auth: corrupt store file")
)
