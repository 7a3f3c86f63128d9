package filter

import "github.com/spoolmq/spool/internal/store"

// Both filters are what the store's GetMessage takes.
var (
	_ store.MessageFilter = (*TagFilter)(nil)
	_ store.MessageFilter = (*SQLFilter)(nil)
	_ store.MessageFilter = Filter(nil)
)
