//go:build !soak

package ha

// catchUpBytes is how much the master holds before a new slave connects
// in TestNewSlaveCatchesUpAndItsQueuesEqualTheMasters; 2 GiB with -tags
// soak.
const catchUpBytes = 64 << 20
