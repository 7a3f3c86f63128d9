package broker

// Permission bits of topics and of the broker (RocketMQ PermName).
const (
	permPriority = 1 << 3
	permRead     = 1 << 2
	permWrite    = 1 << 1
	permInherit  = 1 << 0
)

func isReadable(perm int) bool  { return perm&permRead != 0 }
func isWriteable(perm int) bool { return perm&permWrite != 0 }
func isInherited(perm int) bool { return perm&permInherit != 0 }
