package timer

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/message"
)

// This file holds the cancelling of timers: a delete marker is a timer
// message with TIMER_DEL_UNIQKEY = DeleteKey(real topic, UNIQ_KEY of the
// timer to cancel) and the same due time as that timer. It is linked into
// the wheel as any timer (its timer-log entry flagged), so it lies in the
// same slot as the timer it cancels; it is never delivered. Before a slot
// delivers anything, the keys of its markers are known (read at enqueue,
// or from the marker records when the slot is walked), and a timer of the
// same second whose key is among them is counted as cancelled instead of
// delivered. A marker linked after its timer was delivered cancels
// nothing. Across a restart the markers are walked again with their slot,
// so a cancelled timer stays cancelled.

// DeleteKey is the value of TIMER_DEL_UNIQKEY that cancels the timer of
// realTopic whose UNIQ_KEY is uniqKey (RocketMQ's
// TimerMessageStore.buildDeleteKey: topic "+" key).
func DeleteKey(realTopic, uniqKey string) string { return realTopic + "+" + uniqKey }

// noteCancelLocked remembers a delete marker's key for its due second.
func (s *Service) noteCancelLocked(due int64, key string) {
	if key == "" {
		return
	}
	sec := due / 1000
	m := s.cancels[sec]
	if m == nil {
		m = map[string]struct{}{}
		s.cancels[sec] = m
	}
	m[key] = struct{}{}
}

// cancelled reports whether a delete marker of the timer's second names key.
func (s *Service) cancelled(due int64, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cancels[due/1000][key]
	return ok
}

// forgetCancelsLocked drops the keys of the seconds up to sec, once its
// slot is finished.
func (s *Service) forgetCancelsLocked(sec int64) {
	for k := range s.cancels {
		if k <= sec {
			delete(s.cancels, k)
		}
	}
}

// learnCancels reads the records of the delete markers of the loaded
// slot's round (second sec) found by its walk.
func (s *Service) learnCancels(ents []walkedEntry, sec int64) {
	for _, we := range ents {
		if !we.del || we.due/1000 > sec {
			continue
		}
		rec, err := s.st.LookMessageByOffset(we.phy)
		var key string
		if err == nil {
			h, err2 := message.ParseRecordHeader(rec)
			if err2 == nil {
				key, _ = h.Property(rec, message.PropertyTimerDelUniqKey)
			}
			err = err2
		}
		if err != nil || key == "" {
			s.logger.Error("timer: delete marker unreadable; its timer is not cancelled", "offset", we.phy, "due", we.due, "err", err)
			continue
		}
		s.mu.Lock()
		s.noteCancelLocked(we.due, key)
		s.mu.Unlock()
	}
}

// dropMarker accounts a delete marker whose time has come.
func (s *Service) dropMarker() {
	s.c.markers.Add(1)
	s.pending.Add(-1)
}

// cancelledTimer reports (and counts) a due timer record that a delete
// marker of its second names.
func (s *Service) cancelledTimer(e slotEntry, ext *message.Ext) bool {
	uniq := ext.Properties[message.PropertyUniqClientMessageIDKeyIdx]
	if uniq == "" || !s.cancelled(e.due, DeleteKey(ext.Properties[message.PropertyRealTopic], uniq)) {
		return false
	}
	s.c.cancelled.Add(1)
	s.pending.Add(-1)
	s.topics.add(ext.Properties[message.PropertyRealTopic], 2, 1)
	s.logger.Debug("timer: timer cancelled", "offset", e.phy, "due", e.due, "uniqKey", uniq)
	return true
}

// RecallDue is the due time a recall handle's timestamp stands for: the
// send answer's handle carries TIMER_OUT_MS + 1 (RocketMQ rounds the due
// time down and adds one); Spool keeps the exact due time, so the marker
// is due one millisecond before the handle's time.
func RecallDue(handleTimestamp string) (int64, bool) {
	v, err := strconv.ParseInt(handleTimestamp, 10, 64)
	if err != nil || v <= 1 {
		return 0, false
	}
	return v - 1, true
}

// RecallHandle builds the recall handle a send answer carries for a timer
// message of topic with UNIQ_KEY uniq due exactly at dueMs: base64url of
// "v1 topic brokerName timestamp uniq", the timestamp being dueMs + 1 as
// RocketMQ's SendMessageProcessor writes it (RecallMessageHandle.HandleV1).
func RecallHandle(topic, brokerName string, dueMs int64, uniq string) string {
	raw := strings.Join([]string{"v1", topic, brokerName, strconv.FormatInt(dueMs+1, 10), uniq}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}
