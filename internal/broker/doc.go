// Package broker is Spool's RocketMQ-compatible broker: the wiring that
// builds a broker from its parts (internal/metadata for topics, groups,
// offsets and their files; internal/clients for connected producers and
// consumers; internal/transaction for the pending-half index and the
// check-back; internal/schedule for delayed delivery; internal/longpoll
// for held pulls; internal/processor for the admin, offset, heartbeat,
// lock and query handlers; internal/datapath for send, pull, retries and
// dead letters, END_TRANSACTION and request/reply with flow control) and
// registers every request code with its handler (registerProcessors);
// the broker-config and runtime-info handlers; client expiry and
// registration with name servers. Only the command (cmd/spool) imports
// it, tests aside.
//
// Through its parts it owns the broker's config/ directory; it talks to
// storage only through store.MessageStore. It must never: block a worker on a flush (sends are
// answered from the store's completion) or on a held pull (held pulls
// wait on no worker and are re-run through their pull executor, within its
// bounds) or on a name server (a request that
// created a topic is answered from a goroutine once its registration is
// acknowledged); write metadata files on a request path (a background
// writer replaces them atomically; the topic journal is appended by the
// registration worker); touch mapped files; or
// read old messages in a background service outside a read budget (the
// transaction check-back and the recovery scans are budgeted).
//
// It keeps no in-flight count of its own: a handler returns its answer as
// a transport.Reply (a value, or the request's Responder completed once
// later), and admission, in-flight accounting and draining are the
// transport's.
//
// Metadata files, under storePathRootDir/config (RocketMQ's names and JSON
// forms; each replaced by temp file + fsync + rename + fsync of the dir):
//
//	topics.json             {"topicConfigTable":{"T":{"topicName":"T","readQueueNums":8,
//	                          "writeQueueNums":8,"perm":6,"topicFilterType":"SINGLE_TAG",
//	                          "topicSysFlag":0,"order":false,"attributes":{}}, ...},
//	                         "dataVersion":{"timestamp":ms,"counter":n,"stateVersion":0}}
//	subscriptionGroup.json  {"subscriptionGroupTable":{"G":{"groupName":"G","consumeEnable":true,
//	                          ..., "retryQueueNums":1,"retryMaxTimes":16, ...}},"dataVersion":{...}}
//	consumerOffset.json     {"offsetTable":{"T@G":{"0":5,"1":3}},"dataVersion":{...}}
//	delayOffset.json        {"offsetTable":{"<level>":<next offset of SCHEDULE_TOPIC_XXXX queue level-1>},
//	                         "commitLogOffset":<every delivery missing from the table lies at or after it>}
//	topics.journal          one line per topic change not yet in topics.json (Spool's):
//	                         {"dataVersion":{...},"topicConfig":{...}} or
//	                         {"dataVersion":{...},"deleted":"T"}; fsynced before the change is
//	                         answered, emptied once topics.json holds it
//	transactionIndex.json   {"halfFrom":n,"opFrom":n,"groups":["pg",...],"pending":[[queueOffset,
//	                          commitLogOffset,size,bornTimestamp,storeTimestamp,immunityMs,checks,
//	                          groupIndex,opMark],...]}  (Spool's; snapshot of the pending halves,
//	                          written by the check service after rounds that changed it)
//	slaveConsumerOffset.json {"offsets":[{"topic":"T","group":"G","queueId":0,"offset":9},...]}
//	                          (Spool's; a slave's note of the offsets committed on it that
//	                          it still hands its master, commit_note.go)
//
// Wire forms the broker produces or reads (beyond the remoting frame):
//
//	send answer ext    msgId=<offsetMsgId[,offsetMsgId...]> queueId=<n> queueOffset=<n>
//	                   transactionId=<UNIQ_KEY> MSG_REGION=<regionId> TRACE_ON=<bool>
//	stored send        the client's properties + UNIQ_KEY (when missing) + CLUSTER=<cluster>
//	                   MSG_REGION=<regionId> TRACE_ON=<bool>, the broker's values replacing
//	                   the client's (single, reply, and appended to each batch member's own)
//	pull answer ext    suggestWhichBrokerId=<id> nextBeginOffset=<n> minOffset=<n> maxOffset=<n>
//	                   (on every pull answer); body = stored records back to back:
//	                   +-----------+-----------+-----+
//	                   | record 1  | record 2  | ... |   each record as stored (V1 layout)
//	                   +-----------+-----------+-----+
//	registration       REGISTER_BROKER ext brokerName brokerAddr clusterName haServerAddr
//	                   brokerId compressed bodyCrc32; body namesrv.RegisterBrokerBody: the
//	                   whole table compressed (compressedRegister), or a created/updated
//	                   topic alone as JSON
//	                   {"topicConfigSerializeWrapper":{"topicConfigTable":{...},"dataVersion":{...}},
//	                    "filterServerList":[]}
//	delayed message    SCHEDULE_TOPIC_XXXX queue level-1; properties + REAL_TOPIC, REAL_QID;
//	                   consume-queue tag field = delivery time (ms)
//	delivered delay    REAL_TOPIC/REAL_QID record; properties - DELAY - TIMER_* +
//	                   __DELAY_SRC=<level>:<schedule queue offset>; after a crash the
//	                   CommitLog from delayOffset.json's commitLogOffset to its end is
//	                   scanned and each level resumes after its highest marker
//	timer message      TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS without DELAY, when
//	                   timerWheelEnable: handed to internal/timer (rmq_sys_wheel_timer,
//	                   delivered through the store with __TIMER_SRC); refusals answered with
//	                   timer.ResponseCode. __DELAY_SRC and __TIMER_SRC sent by clients are
//	                   dropped: only the broker writes them
//	half message       RMQ_SYS_TRANS_HALF_TOPIC queue 0; properties + REAL_TOPIC, REAL_QID,
//	                   __transactionId__; transaction bits cleared
//	op record          RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0, decimal text bodies:
//	                   tag "d", body "<half queue offset>" = resolved (commit,
//	                   rollback, given up); tag "c", body "<half queue offset>:<n>"
//	                   [","...] (up to 256) = check attempt n made (the check count;
//	                   the half itself is never re-appended, checks name the original)
//	rebuild floors     consumerOffset.json group CID_RMQ_SYS_TRANS: half queue offset below
//	                   which all halves are resolved, op queue offset below which no op
//	                   refers to a half above that floor (used when there is no snapshot)
//
// Pending halves are indexed in memory (half offset -> CommitLog offset,
// size, born and store time, check count, producer group) from the put path
// and, after a start, from the snapshot plus a rebuild that reads the half
// and op records stored after it (or, without a snapshot, from the floors).
// The check service (internal/transaction) reads a half record only to
// check it or give it up, on its own goroutine, within transactionCheckReadMsgsPerSecond
// and transactionCheckReadBytesPerSecond (the rebuild shares the budget);
// a check attempt for a group without a live producer connection reads
// nothing:
//
//	half put ──▶ index.add ◀── rebuild (budgeted reads of half + op queues)
//	END_TRANSACTION / give-up ──▶ op "d" ──▶ index.remove   (a rollback of an indexed
//	  half reads nothing; a commit answering a check takes the record the check
//	  read from a 4 MiB cache)
//	every transactionCheckInterval: candidates = index entries with
//	  now-born >= max(transactionTimeOut, immunity)   (no read)
//	  ├─ attempts >= transactionCheckMax ──▶ budget.wait(size) ──▶ read
//	  │     ──▶ TRANS_CHECK_MAX_TIME_TOPIC + op "d"
//	  ├─ no live producer of PGROUP ──▶ op "c" (attempt), no read
//	  └─ budget.wait(size) ──▶ read ──▶ CHECK_TRANSACTION_STATE oneway + op "c"
//
// # Flow control and busy answers
//
// Every busy answer is SYSTEM_BUSY (2) with RocketMQ's remark prefix, the
// measured value and the limit appended:
//
//	remark prefix          when                                          limit key
//	[REJECTREQUEST]        send refused before queueing: put lock held   osPageCacheBusyTimeOutMills
//	                       too long, or transient store pool empty        (transientStorePoolSize)
//	[REJECTREQUEST]        a connection's requests in flight at the cap   maxInflightRequestsPerConnection
//	[OVERLOAD]             executor queue full                            send/pull/...ThreadPoolQueueCapacity
//	[TIMEOUT_CLEAN_QUEUE]  waited in a queue too long (a socket-read      waitTimeMillsInSendQueue (and the
//	                       pause for the body budget counts as waiting)   other waitTimeMillsIn*Queue keys)
//	[PC_SYNCHRONIZED]      the store refused a put: page cache busy       osPageCacheBusyTimeOutMills
//	[PCBUSY_CLEAN_QUEUE]   queued sends answered at once while the put    osPageCacheBusyTimeOutMills
//	                       lock is held too long (checked every 10 ms)
//
// maxQueuedRequestBytes bounds the bodies waiting in executor queues: when
// reached, sockets are not read until it has room (TCP pushes back on the
// senders). Pulls of data outside the store's in-memory window share
// coldReadBytesPerSecond (live): a cold pull is served with what the budget
// holds (at least one message); with the budget in debt it is held on a
// timer (no worker waits, at most 1 s) and run again, answering an empty
// PULL_RETRY_IMMEDIATELY if the budget is still spent. Cold pulls are never
// answered SYSTEM_BUSY: both official clients wait 3 s after a pull error,
// while they pull again at once after PULL_RETRY_IMMEDIATELY (and the next
// pull is held again, which paces them).
//
// Which clients retry a busy answer: the Go client (rocketmq-client-go v2)
// retries sends only on TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE,
// SYSTEM_ERROR and NO_PERMISSION, so every SYSTEM_BUSY reaches the
// application as an error ("CODE: 2, DESC: [...]"). The Java client
// (DefaultMQProducer) lists SYSTEM_BUSY in retryResponseCodes: a sync send
// is retried retryTimesWhenSendFailed (2) more times, on another broker
// when the topic has one; an async send is not retried on a broker's
// answer, and a oneway send never learns of it.
package broker
