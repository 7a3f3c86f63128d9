package transaction

// checkStep is what a round does with one candidate half.
type checkStep int

const (
	// stepCount counts one check attempt and reads nothing: the half's
	// group has no live producer connection and fewer than
	// transactionCheckMax attempts.
	stepCount checkStep = iota
	// stepExpire drops the half: its record left the CommitLog.
	stepExpire
	// stepCheck reads the half and sends CHECK_TRANSACTION_STATE.
	stepCheck
	// stepGiveUp reads the half and moves it to TRANS_CHECK_MAX_TIME_TOPIC.
	stepGiveUp
)

// planCheck decides a round's step for candidate h. As in RocketMQ a round
// without a producer still counts as an attempt, so a half whose producer
// is gone is given up after transactionCheckMax rounds (that move reads it
// once). minPhy (the CommitLog's first offset) is read only when needed.
func planCheck(h PendingHalf, hasProducer bool, minPhy func() int64, checkMax int) checkStep {
	switch {
	case !hasProducer && int(h.Checks) < checkMax:
		return stepCount
	case h.Phy < minPhy():
		return stepExpire
	case int(h.Checks) >= checkMax || !hasProducer:
		return stepGiveUp
	}
	return stepCheck
}
