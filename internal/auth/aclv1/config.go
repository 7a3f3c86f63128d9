package aclv1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spoolmq/spool/internal/auth"
)

// ErrInvalid: a plain_acl.yml that RocketMQ would not load.
var ErrInvalid = errors.New("aclv1: invalid plain_acl.yml")

// Perm is RocketMQ's ACL 1.0 permission bit set.
type Perm byte

// Permission bits (RocketMQ's Permission).
const (
	Deny   Perm = 1
	AnyPrm Perm = 1 << 1
	Pub    Perm = 1 << 2
	Sub    Perm = 1 << 3
)

// ParsePerm is RocketMQ's Permission.parsePermFromString: PUB, SUB,
// PUB|SUB or SUB|PUB; DENY, anything else and "" are Deny.
func ParsePerm(s string) Perm {
	switch strings.TrimSpace(s) {
	case "PUB":
		return Pub
	case "SUB":
		return Sub
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub
	}
	return Deny
}

func validPerm(s string) bool {
	switch strings.TrimSpace(s) {
	case "PUB", "SUB", "PUB|SUB", "SUB|PUB", "DENY":
		return true
	}
	return false
}

// allows is RocketMQ's Permission.checkPermission.
func allows(needed, owned Perm) bool {
	if owned&Deny != 0 {
		return false
	}
	if needed&AnyPrm != 0 {
		return owned&(Pub|Sub) != 0
	}
	return needed&owned != 0
}

// File is plain_acl.yml as written.
type File struct {
	GlobalWhiteRemoteAddresses []string  `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []Account `yaml:"accounts"`
}

// Account is one account of plain_acl.yml.
type Account struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

// Config is a loaded plain_acl.yml, ready for Check.
type Config struct {
	File     File
	global   []matcher
	accounts map[string]*account
}

type account struct {
	Account
	white        matcher
	defaultTopic Perm
	defaultGroup Perm
	perms        map[string]Perm // topic, or %RETRY%<group>
}

// Parse reads plain_acl.yml. It fails with ErrInvalid as RocketMQ refuses
// a file: keys of 6 characters or fewer, a permission that is not one of
// DENY, PUB, SUB, PUB|SUB, an entry that is not name=PERM, a bad address.
func Parse(b []byte) (*Config, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c := &Config{File: f, accounts: map[string]*account{}}
	for _, a := range f.GlobalWhiteRemoteAddresses {
		m, err := parseAddress(a)
		if err != nil {
			return nil, err
		}
		c.global = append(c.global, m)
	}
	for _, a := range f.Accounts {
		if len(a.AccessKey) <= 6 || len(a.SecretKey) <= 6 {
			return nil, fmt.Errorf("%w: The accessKey=%s and secretKey cannot be null and length should longer than 6", ErrInvalid, a.AccessKey)
		}
		if _, dup := c.accounts[a.AccessKey]; dup {
			return nil, fmt.Errorf("%w: accessKey %s appears twice", ErrInvalid, a.AccessKey)
		}
		acc := &account{Account: a, perms: map[string]Perm{},
			defaultTopic: ParsePerm(a.DefaultTopicPerm), defaultGroup: ParsePerm(a.DefaultGroupPerm)}
		var err error
		if acc.white, err = parseAddress(a.WhiteRemoteAddress); err != nil {
			return nil, err
		}
		for _, kind := range []struct {
			list  []string
			group bool
		}{{a.GroupPerms, true}, {a.TopicPerms, false}} {
			for _, p := range kind.list {
				name, perm, err := splitPerm(p)
				if err != nil {
					return nil, err
				}
				if kind.group {
					name = auth.RetryPrefix + name
				}
				acc.perms[name] = ParsePerm(perm)
			}
		}
		c.accounts[a.AccessKey] = acc
	}
	return c, nil
}

// splitPerm reads "name=PERM".
func splitPerm(s string) (name, perm string, err error) {
	parts := strings.Split(s, "=")
	if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || !validPerm(parts[1]) {
		return "", "", fmt.Errorf("%w: Parse resource permission failed for %q", ErrInvalid, s)
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), nil
}

// matcher is one white address pattern (RocketMQ's RemoteAddressStrategy).
type matcher func(ip string) bool

func never(string) bool  { return false }
func always(string) bool { return true }

func canonical(ip string) (string, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return "", false
	}
	return a.Unmap().String(), true
}

func parseAddress(s string) (matcher, error) {
	s = strings.TrimSpace(s)
	bad := func() (matcher, error) { return nil, fmt.Errorf("%w: address %q", ErrInvalid, s) }
	switch {
	case s == "":
		return never, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		return always, nil
	case strings.HasSuffix(s, "}"):
		i := strings.LastIndexAny(s, ".:")
		if i < 0 || !strings.HasPrefix(s[i+1:], "{") {
			return bad()
		}
		var list []string
		for _, last := range strings.Split(strings.TrimSuffix(s[i+2:], "}"), ",") {
			list = append(list, s[:i+1]+strings.TrimSpace(last))
		}
		return oneOf(list)
	case strings.Contains(s, ","):
		return oneOf(strings.Split(s, ","))
	case strings.ContainsAny(s, "*-"):
		return ipv4Range(s)
	}
	want, ok := canonical(s)
	if !ok {
		return bad()
	}
	return func(ip string) bool { got, ok := canonical(ip); return ok && got == want }, nil
}

func oneOf(list []string) (matcher, error) {
	set := map[string]bool{}
	for _, a := range list {
		c, ok := canonical(a)
		if !ok {
			return nil, fmt.Errorf("%w: address %q", ErrInvalid, a)
		}
		set[c] = true
	}
	return func(ip string) bool { c, ok := canonical(ip); return ok && set[c] }, nil
}

// ipv4Range reads a.b.c.d where one of b, c, d is "*" or "lo-hi" and
// every part after it is "*".
func ipv4Range(s string) (matcher, error) {
	bad := func() (matcher, error) { return nil, fmt.Errorf("%w: address range %q", ErrInvalid, s) }
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return bad()
	}
	idx, lo, hi := -1, 0, 0
	for i := 1; i < 4 && idx < 0; i++ {
		p := strings.TrimSpace(parts[i])
		switch {
		case p == "*":
			idx, lo, hi = i, 0, 255
		case strings.Contains(p, "-"):
			a, b, _ := strings.Cut(p, "-")
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || x < 0 || y > 255 || x > y {
				return bad()
			}
			idx, lo, hi = i, x, y
		}
	}
	if idx < 0 {
		return bad()
	}
	head := make([]int, idx)
	for i := 0; i < idx; i++ {
		n, err := strconv.Atoi(strings.TrimSpace(parts[i]))
		if err != nil || n < 0 || n > 255 {
			return bad()
		}
		head[i] = n
	}
	for i := idx + 1; i < 4; i++ {
		if strings.TrimSpace(parts[i]) != "*" {
			return bad()
		}
	}
	return func(ip string) bool {
		a, err := netip.ParseAddr(strings.TrimSpace(ip))
		if err != nil {
			return false
		}
		a = a.Unmap()
		if !a.Is4() {
			return false
		}
		b := a.As4()
		for i, h := range head {
			if int(b[i]) != h {
				return false
			}
		}
		return int(b[idx]) >= lo && int(b[idx]) <= hi
	}, nil
}
