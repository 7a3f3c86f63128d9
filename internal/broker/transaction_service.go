package broker

import (
	"github.com/spoolmq/spool/internal/datapath"
	"github.com/spoolmq/spool/internal/transaction"
)

// transactionService is what the broker uses of the transaction check
// service (internal/transaction): it starts and stops it, reads its
// figures and gives the data path the rest.
type transactionService interface {
	Start()
	Stop()
	Stats() transaction.Stats
	// The index, the checked-record cache and the op records the data
	// path's half put and END_TRANSACTION use.
	datapath.Transactions
}

// TransactionStats are the transaction check service's counters.
type TransactionStats = transaction.Stats

// TransactionStats returns the transaction check service's counters.
func (b *Broker) TransactionStats() TransactionStats { return b.txCheck.Stats() }
