//go:build soak

package ha

// catchUpBytes: the soak form's master holds 2 GiB.
const catchUpBytes = 2 << 30
