package store

import "time"

// PutLockHeldFor is how long the current holder has held the CommitLog's
// put lock, 0 when it is free: RocketMQ's lockTimeMills, the figure behind
// isOSPageCacheBusy (held longer than osPageCacheBusyTimeOutMills). It is
// two atomic loads, cheap enough for every request's admission.
func (st *DefaultMessageStore) PutLockHeldFor() time.Duration {
	if st.commitLog == nil {
		return 0
	}
	return st.commitLog.lockHeldFor()
}
