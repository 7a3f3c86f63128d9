package transport

import (
	"os"
	"strconv"
	"testing"
)

// testEventLoops is what startServer gives servers that set no
// EventLoops: SPOOL_TEST_EVENT_LOOPS runs the package's server tests on
// event loops instead of reader and writer goroutines (make test runs
// them both ways).
var testEventLoops int

func TestMain(m *testing.M) {
	if v := os.Getenv("SPOOL_TEST_EVENT_LOOPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			panic("SPOOL_TEST_EVENT_LOOPS: want a number of loops, got " + v)
		}
		testEventLoops = n
	}
	os.Exit(m.Run())
}
