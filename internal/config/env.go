package config

import "strings"

// EnvBrokerIP1 is the environment variable that overrides brokerIP1, the
// address the broker advertises to name servers and clients. RocketMQ has
// no such variable, so Spool uses its own prefix rather than one that looks
// like RocketMQ's.
const EnvBrokerIP1 = "SPOOL_BROKER_IP1"

// ApplyEnv sets the keys that have an environment override in props, using
// getenv (os.Getenv in production), and returns the keys it set. Apply it
// after reading the file and before command-line --set values, so the
// order of precedence is file < environment < command line.
func ApplyEnv(props map[string]string, getenv func(string) string) []string {
	var set []string
	if v := strings.TrimSpace(getenv(EnvBrokerIP1)); v != "" {
		props["brokerIP1"] = v
		set = append(set, "brokerIP1")
	}
	return set
}
