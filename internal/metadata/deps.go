package metadata

import (
	"errors"
	"log/slog"

	"github.com/spoolmq/spool/internal/clock"
)

// ErrMetadata marks a metadata file (topics, groups, offsets) that cannot
// be read or written.
var ErrMetadata = errors.New("broker metadata file")

// Deps are what the metadata managers take from the broker that builds
// them; nothing else of the broker reaches this package.
type Deps struct {
	// ConfigDir is storePathRootDir/config, where the metadata files live.
	ConfigDir string
	Logger    *slog.Logger
	// BuiltinTopics are the system topics created at start-up; entries of
	// topics.json override them.
	BuiltinTopics []*TopicConfig
	// AutoCreateTopic is the template topic (TBW102) whose inherit bit
	// follows autoCreateTopicEnable when a send creates a topic from it.
	AutoCreateTopic string
	// ValidateGroup names what is wrong with a group name, "" when it is
	// legal; an auto-created subscription group must be legal.
	ValidateGroup func(group string) string
	// Clock stamps the data versions; nil = the wall clock.
	Clock clock.Clock
}
