package datapath

import (
	"github.com/spoolmq/spool/internal/schedule"
	"github.com/spoolmq/spool/internal/store"
	"github.com/spoolmq/spool/internal/timer"
	"github.com/spoolmq/spool/internal/transaction"
	"github.com/spoolmq/spool/message"
	"github.com/spoolmq/spool/remoting"
)

// PutMessage stores a message from the send and END_TRANSACTION paths.
// A half message is indexed for the check service before done runs, so
// the producer cannot end a transaction the index does not know yet. A
// timer message (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS, no
// DELAY level) goes to the timing wheel. It returns an error, and does not
// call done, when the timing wheel refuses the message; answer
// timer.ResponseCode(err) with remark err.Error().
func (d *Path) PutMessage(m *message.Inner, done func(store.PutResult)) error {
	done = d.replicated(m.WaitStoreMsgOK(), done)
	if m.Topic == topicTransHalf {
		d.putHalf(m, done)
		return nil
	}
	if w := d.timers(); w != nil && timer.HasTimerProperty(m.Properties) {
		ok, err := w.Schedule(m, done)
		if err != nil || ok {
			return err
		}
	}
	d.store.PutMessage(m, done)
	return nil
}

// putHalf stores a half message and indexes it before done runs.
func (d *Path) putHalf(m *message.Inner, done func(store.PutResult)) {
	idx := d.tx.Index()
	id := idx.BeginPut(d.store.MaxOffsetInQueue(topicTransHalf, 0), d.store.MaxOffsetInQueue(topicTransOpHalf, 0))
	d.store.PutMessage(m, func(r store.PutResult) {
		if r.Status == store.PutOK || r.Status == store.FlushDiskTimeout {
			idx.EndPut(id, transaction.PendingFromPut(m, r))
		} else {
			idx.EndPut(id, nil)
		}
		done(r)
	})
}

// timerRefusal is the answer to a timer message when the wheel is off.
func (d *Path) timerRefusal(props map[string]string) (int32, string, bool) {
	if d.timers() != nil || !hasTimerProperty(props) {
		return 0, "", false
	}
	return remoting.SystemError, "accurate timer message is not enabled, timerWheelEnable is false", true
}

// stripMarkers removes the delivery markers of the delay and timer
// services from a message a client sent: only the broker writes them.
func stripMarkers(props map[string]string) {
	delete(props, schedule.PropertyDelaySource)
	delete(props, timer.PropertyTimerSource)
}
