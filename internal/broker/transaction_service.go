package broker

import "github.com/spoolmq/spool/internal/transaction"

// transactionService is what the broker uses of the transaction check
// service (internal/transaction): the half put and END_TRANSACTION keep
// its index current and write their op records through it.
type transactionService interface {
	Start()
	Stop()
	Stats() transaction.Stats
	// Index is the pending-half index.
	Index() *transaction.Index
	// TakeChecked returns the half record a check has just read, if any.
	TakeChecked(commitLogOffset int64) ([]byte, bool)
	// PutOp records a half as resolved, then calls done with the code.
	PutOp(halfOffset int64, done func(code int32, remark string))
}

// TransactionStats are the transaction check service's counters.
type TransactionStats = transaction.Stats

// TransactionStats returns the transaction check service's counters.
func (b *Broker) TransactionStats() TransactionStats { return b.txCheck.Stats() }
