package metadata

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// testDeps are the broker's defaults reduced to what the managers read:
// TBW102 as the auto-create template and SELF_TEST_TOPIC without the
// inherit bit.
func testDeps(t testing.TB, dir string) Deps {
	return Deps{
		ConfigDir: dir,
		Logger:    testLogger(t),
		BuiltinTopics: []*TopicConfig{
			NewTopicConfig("SELF_TEST_TOPIC", 1, 1, PermRead|PermWrite),
			NewTopicConfig("TBW102", 8, 8, PermInherit|PermRead|PermWrite),
		},
		AutoCreateTopic: "TBW102",
		ValidateGroup:   func(string) string { return "" },
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
