package message

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// AddrFromNet converts a connection address. IPv4 addresses (including
// IPv4-mapped IPv6) become 4 bytes; anything unknown gives the zero Addr.
func AddrFromNet(a net.Addr) Addr {
	switch t := a.(type) {
	case *net.TCPAddr:
		return addrFromIP(t.IP, t.Port)
	case *net.UDPAddr:
		return addrFromIP(t.IP, t.Port)
	case nil:
		return Addr{}
	}
	if p, err := ParseAddr(a.String()); err == nil {
		return p
	}
	return Addr{}
}

// AddrOfConn is AddrFromNet for a connection's address, which nothing
// changes: the IP of a TCP address aliases a's bytes instead of being
// copied, so a send's born host costs no allocation. The result must not
// be written to.
func AddrOfConn(a net.Addr) Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		if v4 := t.IP.To4(); v4 != nil {
			return Addr{IP: v4, Port: int32(t.Port)}
		}
		if len(t.IP) == net.IPv6len {
			return Addr{IP: t.IP, Port: int32(t.Port)}
		}
	}
	return AddrFromNet(a)
}

func addrFromIP(ip net.IP, port int) Addr {
	if v4 := ip.To4(); v4 != nil {
		return Addr{IP: append([]byte(nil), v4...), Port: int32(port)}
	}
	if len(ip) == net.IPv6len {
		return Addr{IP: append([]byte(nil), ip...), Port: int32(port)}
	}
	return Addr{Port: int32(port)}
}

// ParseAddr parses "ip:port" ("[v6]:port" for IPv6).
func ParseAddr(s string) (Addr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Addr{}, fmt.Errorf("%w: %q: %v", ErrBadAddr, s, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return Addr{}, fmt.Errorf("%w: %q: %v", ErrBadAddr, s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Addr{}, fmt.Errorf("%w: %q: port: %v", ErrBadAddr, s, err)
	}
	ip = ip.Unmap()
	var b []byte
	if ip.Is4() {
		a4 := ip.As4()
		b = a4[:]
	} else {
		a16 := ip.As16()
		b = a16[:]
	}
	return Addr{IP: b, Port: int32(p)}, nil
}

// String renders "ip:port" ("[v6]:port" for IPv6); an empty IP prints as
// 0.0.0.0.
func (a Addr) String() string {
	var host string
	switch len(a.IP) {
	case 0:
		host = "0.0.0.0"
	case net.IPv4len, net.IPv6len:
		host = net.IP(a.IP).String()
	default:
		host = fmt.Sprintf("?%x", a.IP)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(a.Port)))
}

// IsV6 reports whether a is stored as a 16-byte IPv6 address (IPv4-mapped
// addresses are stored as IPv4).
func (a Addr) IsV6() bool { return hostWidth(a.IP) == 16 }

// hostWidth is the stored width of an address (4 or 16), or 0 when the IP
// is neither. An empty IP is stored as 0.0.0.0.
func hostWidth(ip []byte) int {
	switch len(ip) {
	case 0, 4:
		return 4
	case 16:
		if isV4Mapped(ip) {
			return 4
		}
		return 16
	}
	return 0
}

func isV4Mapped(ip []byte) bool {
	for _, b := range ip[:10] {
		if b != 0 {
			return false
		}
	}
	return ip[10] == 0xff && ip[11] == 0xff
}

// appendHost appends the stored form of a: IP (4 or 16 bytes) + port.
func appendHost(dst []byte, a Addr) []byte {
	switch {
	case len(a.IP) == 0:
		dst = append(dst, 0, 0, 0, 0)
	case len(a.IP) == 16 && isV4Mapped(a.IP):
		dst = append(dst, a.IP[12:]...)
	default:
		dst = append(dst, a.IP...)
	}
	return be32(dst, a.Port)
}
