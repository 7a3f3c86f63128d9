package broker

import (
	"fmt"
	"time"

	"github.com/spoolmq/spool/internal/delaylevel"
)

// parseDelayLevels parses messageDelayLevel with internal/delaylevel's
// rule.
func parseDelayLevels(s string) ([]time.Duration, error) {
	levels, err := delaylevel.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return levels, nil
}
