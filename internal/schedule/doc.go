// Package schedule owns the delivery of delayed messages (RocketMQ's
// delay levels): one goroutine per level reads its SCHEDULE_TOPIC_XXXX
// queue and stores each due message again in its real topic and queue,
// the progress file config/delayOffset.json with the CommitLog mark it is
// valid up to, and the start-up scan that recomputes progress from the
// delivery markers after a crash.
//
// The broker builds the service from a Deps (the store, the parsed delay
// levels, the schedule topic's name, the put counter and the read budget
// of the recovery scan); the send path that rewrites a delayed message
// into the schedule topic, and the parsing of messageDelayLevel, stay with
// the broker. The package must not import the broker, the client
// registries or the transport, and it never answers a request.
package schedule
