// Package transaction owns the broker's handling of unresolved
// transactional half messages once they are stored: the in-memory index
// of pending halves (what a check round takes, without reading the store),
// its snapshot file config/transactionIndex.json, the small cache of half
// records just read for checks that lets END_TRANSACTION skip a second
// read, the op records (RMQ_SYS_TRANS_OP_HALF_TOPIC) that resolve halves
// and count check attempts, and the check service that rebuilds the index
// after a start and runs the check rounds.
//
// The index and the round planner are data structures and pure functions:
// they read no store, send nothing and take no clock; the scenario files in
// testdata/txcheck show what a round does. The check service reaches the
// store, the consumer offset table, producer connections, the clock and
// the read budget only through its Deps, built by the broker's wiring.
// This package must not import the broker, the client registries or the
// transport; END_TRANSACTION and the half put stay with the broker's
// request handling and call the service.
package transaction
