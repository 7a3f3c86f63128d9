package tlsconf

import (
	"net"
	"net/netip"
)

// Refusal is why a connection was closed by the listener.
type Refusal int

// The reasons, each counted in ListenerStats.
const (
	Admitted      Refusal = iota
	OverTotal             // MaxConns reached
	OverPerIP             // MaxConnsPerIP reached for the source address
	PlainRefused          // a plain client on an enforcing port
	HandshakeFail         // the TLS handshake failed or timed out, or the first byte never came
	AuthDeadline          // not authenticated within AuthDeadline
	numRefusals
)

func (r Refusal) String() string {
	switch r {
	case Admitted:
		return "admitted"
	case OverTotal:
		return "too many connections"
	case OverPerIP:
		return "too many connections from this address"
	case PlainRefused:
		return "plain connection on a TLS-only port"
	case HandshakeFail:
		return "TLS handshake failed"
	case AuthDeadline:
		return "not authenticated in time"
	}
	return "unknown"
}

// admit decides whether one more connection may open: open is the
// listener's open connections, fromIP those from the new one's address;
// a limit of 0 or less is no limit.
func admit(maxConns, maxPerIP, open, fromIP int) Refusal {
	if maxConns > 0 && open >= maxConns {
		return OverTotal
	}
	if maxPerIP > 0 && fromIP >= maxPerIP {
		return OverPerIP
	}
	return Admitted
}

// sourceKey is the per-IP limit's key for a remote address: the IP alone
// (IPv4-mapped IPv6 folded to IPv4), or the whole address when it is not
// an IP.
func sourceKey(a net.Addr) string {
	if a == nil {
		return ""
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap().String()
		}
	}
	s := a.String()
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().String()
	}
	return s
}

// recordTLS is the first byte of a TLS handshake record
// (ContentType handshake, 22).
const recordTLS = 0x16

// sniff decides, from a connection's first byte, whether it speaks TLS
// and whether the mode lets it in. A remoting frame starts with the high
// byte of its length, 0x00 for any frame under 16 MiB, so it never looks
// like a handshake.
func sniff(mode Mode, first byte) (useTLS bool, r Refusal) {
	isTLS := first == recordTLS
	switch mode {
	case Enforcing:
		if !isTLS {
			return false, PlainRefused
		}
		return true, Admitted
	case Permissive:
		return isTLS, Admitted
	}
	return false, Admitted
}
