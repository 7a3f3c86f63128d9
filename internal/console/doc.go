// Package console owns Spool's read-only web console: server-rendered
// pages of the cluster and the broker, the topics with their queues and
// rates, the consumer groups with their lag per queue (produced, committed,
// lag, last consume time), message lookup by id and by key, and a live
// throughput chart drawn by a small script that polls the console's JSON
// endpoint. Templates, the style sheet and the script are embedded
// (embed): nothing is fetched from the network at run time.
//
// It reads the broker only through the Broker interface, which the wiring
// implements; it changes nothing. It is mounted on the metrics listener's
// mux (metrics.Server.Mux) at "/".
//
// The package imports nothing of Spool's: never the broker, the store,
// the metadata tables or the transport.
package console
