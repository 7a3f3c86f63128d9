package incidents

import "testing"

// TestTransactionCheckBackStorm is seed 000's root cause: 50,000 unresolved
// half messages older than transactionTimeOut, evicted from memory, with
// the producer answering UNKNOWN to every check. The check-back reads must
// stay within the broker's read budget and send p99 within 2x the
// baseline.
//
// It is skipped until the pieces it measures exist: the broker's
// check-back read budget (a live-changeable messages-or-bytes-per-second
// limit on the reads TransactionMessageCheckService-style scanning does),
// a counter of the records and bytes the check-back reads actually
// fetched (in store.Stats or the runtime info), and store.EvictPageCache
// to make the half messages cold.
func TestTransactionCheckBackStorm(t *testing.T) {
	t.Skip("waits for the broker's transaction check-back read budget and a counter of check-back reads (records and bytes) to assert \"check reads within budget\", and for store.EvictPageCache")
}
