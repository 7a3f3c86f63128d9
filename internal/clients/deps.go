package clients

import "log/slog"

// Deps are what the client registries take from the broker that
// builds them.
type Deps struct {
	// Logger logs failed notifications to clients.
	Logger *slog.Logger
}
