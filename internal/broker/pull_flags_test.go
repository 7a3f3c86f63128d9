package broker

import "github.com/spoolmq/spool/internal/datapath"

// The pull sysFlag bits, as the tests spell them.
const (
	pullFlagCommitOffset = datapath.PullFlagCommitOffset
	pullFlagSuspend      = datapath.PullFlagSuspend
	pullFlagSubscription = datapath.PullFlagSubscription
	pullFlagLitePull     = datapath.PullFlagLitePull
)
