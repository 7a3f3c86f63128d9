// Package clients owns what the broker knows of its connected clients:
// the producer and consumer groups registered by heartbeats (one Channel
// per connection), the consumer groups' subscriptions and their compiled
// filters, the expiry of silent clients, the NOTIFY_CONSUMER_IDS_CHANGED
// notifications sent when a group's membership changes, and the
// orderly-consumption queue locks.
//
// The broker builds the registries from a Deps (a logger). The package
// keeps registries in memory only: it must not import the broker or the
// metadata tables, it never reads or writes the store (it names
// store.MessageFilter only as the type of a compiled subscription), and it
// never answers a request; the heartbeat and lock processors stay with the
// broker.
package clients
