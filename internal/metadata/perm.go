package metadata

// Permission bits of topics and of the broker (RocketMQ PermName).
const (
	PermPriority = 1 << 3
	PermRead     = 1 << 2
	PermWrite    = 1 << 1
	PermInherit  = 1 << 0
)

func IsReadable(perm int) bool  { return perm&PermRead != 0 }
func IsWriteable(perm int) bool { return perm&PermWrite != 0 }
func isInherited(perm int) bool { return perm&PermInherit != 0 }
