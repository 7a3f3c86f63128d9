package config

import "errors"

// Sentinel errors. Each is wrapped with the key (and value) it concerns;
// Bind and UpdateLive join one error per offending key.
var (
	// ErrUnknownKey: RocketMQ has no such key and no target declares it.
	ErrUnknownKey = errors.New("unknown configuration key")
	// ErrNotBuilt: the key asks for something Spool has not built, and
	// ignoring it would weaken a promise (replication, access control).
	ErrNotBuilt = errors.New("not built in Spool")
	// ErrBadValue: the value does not parse as the field's type.
	ErrBadValue = errors.New("invalid value")
	// ErrNotLive: the key cannot be changed while running.
	ErrNotLive = errors.New("cannot be changed at run time")
	// ErrBadTarget: a target is not a pointer to a struct, or a prop-tagged
	// field has a type Bind cannot set (a programming error).
	ErrBadTarget = errors.New("invalid bind target")
	// ErrBadEscape: a malformed \uXXXX escape in a .properties file.
	ErrBadEscape = errors.New("malformed escape")
)
