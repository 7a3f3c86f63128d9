package timer

import (
	"errors"

	"github.com/spoolmq/spool/internal/corrupt"
	"github.com/spoolmq/spool/remoting"
)

// Sentinel errors of the package. Errors returned by Schedule wrap one of
// the first three; their text (err.Error()) is written to be the response
// remark as it stands.
var (
	// ErrIllegal refuses a timer message whose time is malformed or further
	// ahead than timerMaxDelaySec (RocketMQ's WHEEL_TIMER_MSG_ILLEGAL).
	ErrIllegal = errors.New("timer message illegal")
	// ErrFlowControl refuses a timer message whose one-second slot already
	// holds more than timerCongestNumEachSlot timers (RocketMQ's
	// WHEEL_TIMER_FLOW_CONTROL).
	ErrFlowControl = errors.New("timer message is under flow control")
	// ErrNotRunning refuses a timer message while the service is not
	// started, is recovering its files failed, or has been closed.
	ErrNotRunning = errors.New("timer service is not running")
	// ErrCorrupt marks a timer file that failed validation where it must be
	// valid (the wheel file's checksum, a synced timer-log entry).
	// It matches corrupt.ErrCorruption too.
	ErrCorrupt = corrupt.New("timer: corruption")
	// ErrConfig reports an invalid configuration.
	ErrConfig = errors.New("timer: invalid configuration")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("timer: closed")
)

// ResponseCode maps an error returned by Schedule to the RocketMQ response
// code the send processor answers with (the remark is err.Error()):
//
//	ErrIllegal     -> MESSAGE_ILLEGAL (13)       as SendMessageProcessor for WHEEL_TIMER_MSG_ILLEGAL
//	ErrFlowControl -> SYSTEM_ERROR (1)           as SendMessageProcessor for WHEEL_TIMER_FLOW_CONTROL
//	ErrNotRunning  -> SERVICE_NOT_AVAILABLE (14)
//	anything else  -> SYSTEM_ERROR (1)
func ResponseCode(err error) int32 {
	switch {
	case errors.Is(err, ErrIllegal):
		return remoting.MessageIllegal
	case errors.Is(err, ErrFlowControl):
		return remoting.SystemError
	case errors.Is(err, ErrNotRunning):
		return remoting.ServiceNotAvailable
	default:
		return remoting.SystemError
	}
}
