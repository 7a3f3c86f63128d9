// Package transaction owns the broker's record of unresolved transactional
// half messages: the in-memory index of pending halves (what a check round
// takes, without reading the store), its snapshot file
// config/transactionIndex.json, and the small cache of half records just
// read for checks that lets END_TRANSACTION skip a second read.
//
// The index is a data structure: it never reads or writes the store, sends
// nothing to clients and takes no clock. It must not import the broker,
// the client registries or the transport. The check service that drives
// rounds from it, and END_TRANSACTION, stay with the broker.
package transaction
