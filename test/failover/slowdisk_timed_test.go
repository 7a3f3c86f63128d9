//go:build failover

package failover

import "time"

// The timed form slows the master's disk for the 30 s.
func init() { slowWindow = 30 * time.Second }
