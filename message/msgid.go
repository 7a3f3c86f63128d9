package message

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

const hexUpper = "0123456789ABCDEF"

// OffsetMsgID is the offsetMsgId of a record: upper-case hex of the store
// IP (4 or 16 bytes), port (int32) and commit-log offset (int64); 32
// characters for IPv4, 56 for IPv6.
func OffsetMsgID(storeHost Addr, commitLogOffset int64) string {
	var out [2 * (16 + 4 + 8)]byte
	return string(AppendOffsetMsgID(out[:0], storeHost, commitLogOffset))
}

// AppendOffsetMsgID appends the offsetMsgId OffsetMsgID returns to dst.
func AppendOffsetMsgID(dst []byte, storeHost Addr, commitLogOffset int64) []byte {
	var raw [16 + 4 + 8]byte
	b := appendHost(raw[:0], storeHost)
	b = be64(b, commitLogOffset)
	return appendHexUpper(dst, b)
}

// ParseOffsetMsgID decodes an offsetMsgId (either case) into store host and
// commit-log offset.
func ParseOffsetMsgID(id string) (Addr, int64, error) {
	var ipLen int
	switch len(id) {
	case 32:
		ipLen = 4
	case 56:
		ipLen = 16
	default:
		return Addr{}, 0, fmt.Errorf("%w: %q has %d characters, want 32 or 56", ErrBadMsgID, id, len(id))
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return Addr{}, 0, fmt.Errorf("%w: %q: %v", ErrBadMsgID, id, err)
	}
	a := Addr{IP: raw[:ipLen:ipLen], Port: int32(binary.BigEndian.Uint32(raw[ipLen:]))}
	return a, int64(binary.BigEndian.Uint64(raw[ipLen+4:])), nil
}

func appendHexUpper(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexUpper[c>>4], hexUpper[c&0xF])
	}
	return dst
}

// uniqIDGen produces UNIQ_KEY values: a 10-byte prefix fixed per process
// (IPv4, pid, a random startup value) and a 6-byte suffix (milliseconds
// since the start of the month, counter). The suffix never repeats: within
// a month (ms<<16 | counter) only grows, and each new month adds one to the
// random value of the prefix.
type uniqIDGen struct {
	mu         sync.Mutex
	prefix     [10]byte
	random     uint32
	month      int64 // months since startup
	monthStart time.Time
	nextMonth  time.Time
	minSeq     uint64 // lowest ms<<16 | counter still free this month
}

var uniqIDs = sync.OnceValue(newUniqIDGen)

func newUniqIDGen() *uniqIDGen {
	g := &uniqIDGen{}
	copy(g.prefix[:4], localIPv4())
	binary.BigEndian.PutUint16(g.prefix[4:], uint16(os.Getpid()))
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	g.random = binary.BigEndian.Uint32(r[:])
	g.setMonthLocked(time.Now())
	return g
}

func (g *uniqIDGen) setMonthLocked(now time.Time) {
	y, m, _ := now.Date()
	g.monthStart = time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
	g.nextMonth = g.monthStart.AddDate(0, 1, 0)
	g.minSeq = 0
	binary.BigEndian.PutUint32(g.prefix[6:], g.random+uint32(g.month))
}

func (g *uniqIDGen) next(now time.Time) string {
	var raw [16]byte
	g.mu.Lock()
	if !now.Before(g.nextMonth) {
		g.month++
		g.setMonthLocked(now)
	}
	seq := uint64(max(now.Sub(g.monthStart).Milliseconds(), 0)) << 16
	seq = max(seq, g.minSeq)
	g.minSeq = seq + 1
	copy(raw[:10], g.prefix[:])
	g.mu.Unlock()
	binary.BigEndian.PutUint32(raw[10:], uint32(seq>>16))
	binary.BigEndian.PutUint16(raw[14:], uint16(seq))
	var out [32]byte
	return string(appendHexUpper(out[:0], raw[:]))
}

// NewUniqID returns a new UNIQ_KEY: 32 upper-case hex characters, unique
// within the process, laid out as RocketMQ's Java client does (IPv4, pid,
// startup value, ms since month start, counter).
func NewUniqID() string { return uniqIDs().next(time.Now()) }

// localIPv4 is the first non-loopback IPv4 address of the host, or
// 127.0.0.1.
func localIPv4() []byte {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				if v4 := n.IP.To4(); v4 != nil {
					return v4
				}
			}
		}
	}
	return []byte{127, 0, 0, 1}
}
