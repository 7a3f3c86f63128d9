package console

import (
	"fmt"
	"strconv"
)

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// permString writes RocketMQ's permission bits as mqadmin does: R, W, X.
func permString(p int) string {
	s := ""
	for _, b := range []struct {
		bit int
		c   string
	}{{4, "R"}, {2, "W"}, {1, "X"}} {
		if p&b.bit != 0 {
			s += b.c
		} else {
			s += "-"
		}
	}
	return s
}
