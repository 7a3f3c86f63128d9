// Package metadata owns the broker's metadata tables and their files under
// storePathRootDir/config: the topic table (topics.json and the topic
// journal), the subscription-group configs (subscriptionGroup.json), the
// committed consumer offsets (consumerOffset.json), their data versions,
// the permission bits of topics, and the metadata file format (a
// background writer that replaces a file by temp file + fsync + rename +
// fsync of the directory).
//
// The broker builds the managers from a Deps (the config directory, the
// built-in system topics, the auto-create template's name, the group-name
// rule, the clock that stamps data versions) and is told of every topic change through OnChange. The package
// holds tables and files only: it must not import the broker, the store,
// the transport or the remoting codecs, and it never answers a request.
package metadata
