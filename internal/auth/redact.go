package auth

import (
	"fmt"
	"log/slog"
)

// String prints a user without its password, so that a user in a log
// line or an error never shows the secret.
func (u User) String() string {
	return fmt.Sprintf("User{%s %s %s}", u.Username, u.Type, u.Status)
}

// GoString is String, for %#v.
func (u User) GoString() string { return u.String() }

// LogValue logs a user without its password.
func (u User) LogValue() slog.Value {
	return slog.GroupValue(slog.String("username", u.Username), slog.String("userType", string(u.Type)), slog.String("userStatus", string(u.Status)))
}

// String prints credentials without the secret key or the token.
func (c Credentials) String() string { return "Credentials{" + c.AccessKey + "}" }

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// LogValue logs credentials without the secret key or the token.
func (c Credentials) LogValue() slog.Value { return slog.StringValue(c.AccessKey) }
