package config

import (
	"strconv"
	"strings"
	"sync"
)

var rocketmqKeySet = sync.OnceValue(func() map[string]struct{} {
	m := make(map[string]struct{}, len(rocketmqKeys))
	for _, k := range rocketmqKeys {
		m[k] = struct{}{}
	}
	return m
})

// isRocketMQKey reports whether RocketMQ reads key from its configuration
// files.
func isRocketMQKey(key string) bool {
	_, ok := rocketmqKeySet()[key]
	return ok
}

// IsRocketMQKey reports whether key is a RocketMQ broker or name-server
// configuration key.
func IsRocketMQKey(key string) bool { return isRocketMQKey(key) }

// refusalRule refuses a value that Spool cannot honour and that would, if
// ignored, leave the operator with weaker guarantees than configured.
type refusalRule struct {
	// refuse returns a reason when value must be refused.
	refuse func(value string) string
	// onlyUnbuilt: the rule applies only while no target declares the key
	// (a target that declares it enforces the value itself).
	onlyUnbuilt bool
	// unlessTrue names a key that, set to true in the same properties,
	// lifts the rule (a value built only in that mode).
	unlessTrue string
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

func whenTrue(reason string) func(string) string {
	return func(v string) string {
		if isTrue(v) {
			return reason
		}
		return ""
	}
}

func whenAbove(limit int64, reason string) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil && n > limit {
			return reason
		}
		return ""
	}
}

const (
	noReplication = "replication by DLedger and slaves acting as masters are not built; use brokerRole with a master (brokerId=0) and slaves (brokerId>0)"
	// totalReplicas and minInSyncReplicas act only with
	// enableSlaveActingMaster and enableAutoInSyncReplicas.
	noActingMaster = "automatic in-sync replica counts (enableAutoInSyncReplicas, enableSlaveActingMaster) are not built; a SYNC_MASTER waits for max(inSyncReplicas, 2) copies"
	noAccess       = "access control is built in the broker only; every client of this server would be allowed"
	// noControllerMode: enableControllerMode is a broker key.
	noControllerMode = "controller mode is a broker setting; this server would ignore it"
)

// refusals maps a key to its rule. Remove a rule when Spool builds what it
// guards.
var refusals = map[string]refusalRule{
	// The broker declares enableControllerMode and refuses what it cannot
	// run itself; elsewhere the key would be ignored.
	"enableControllerMode":    {onlyUnbuilt: true, refuse: whenTrue(noControllerMode)},
	"enableDLegerCommitLog":   {refuse: whenTrue(noReplication)},
	"duplicationEnable":       {refuse: whenTrue(noReplication)},
	"enableSlaveActingMaster": {refuse: whenTrue(noReplication)},
	"allAckInSyncStateSet":    {refuse: whenTrue(noReplication), unlessTrue: "enableControllerMode"},
	"totalReplicas":           {refuse: whenAbove(1, noActingMaster)},
	"minInSyncReplicas":       {refuse: whenAbove(1, noActingMaster), unlessTrue: "enableControllerMode"},
	// Access control is built in the broker (which declares these keys);
	// elsewhere (the name server) the keys would be ignored.
	"aclEnable":             {onlyUnbuilt: true, refuse: whenTrue(noAccess)},
	"authenticationEnabled": {onlyUnbuilt: true, refuse: whenTrue(noAccess)},
	"authorizationEnabled":  {onlyUnbuilt: true, refuse: whenTrue(noAccess)},
	"enableControllerInNamesrv": {refuse: whenTrue(
		"a controller inside the name server is not built; run a standalone controller (spool controller -c controller.conf) and point controllerAddr at its listenPort")},
	"rejectTransactionMessage": {onlyUnbuilt: true, refuse: whenTrue(
		"rejecting transaction messages is not built; they would be accepted")},
	"brokerPermission": {onlyUnbuilt: true, refuse: func(v string) string {
		switch strings.TrimSpace(v) {
		case "6", "7":
			return ""
		}
		return "broker permissions are not built; the broker would accept reads and writes"
	}},
}

func nonEmpty(v, reason string) string {
	if strings.TrimSpace(v) != "" {
		return reason
	}
	return ""
}

// refusal returns why key=value is refused, or "". props are the
// properties key came with (nil for a live update).
func refusal(key, value string, bound bool, props map[string]string) string {
	r, ok := refusals[key]
	if !ok || (r.onlyUnbuilt && bound) || (r.unlessTrue != "" && isTrue(props[r.unlessTrue])) {
		return ""
	}
	return r.refuse(value)
}

const maxKeyCompare = 128

// nearestKey returns the RocketMQ or declared key closest to key by edit
// distance (case-insensitive; ties broken alphabetically).
func nearestKey(key string, declared map[string][]field) string {
	if len(key) > maxKeyCompare { // no RocketMQ key is this long; bound the work
		key = key[:maxKeyCompare]
	}
	best, bestD := "", -1
	try := func(k string) {
		d := editDistance(strings.ToLower(key), strings.ToLower(k))
		if bestD < 0 || d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	for _, k := range rocketmqKeys {
		try(k)
	}
	for k := range declared {
		try(k)
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
