package smsrules

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxMediaURLLength is the longest media URL accepted (carriers refuse longer ones).
const MaxMediaURLLength = 2048

// PublicMediaURL decides which media URLs a customer may hand Chorus to send: the carrier fetches
// them from the public internet, so one services accept, all accept. Campaigns' mediaUrl, test
// sends' mediaUrls, polls' introMediaUrl and replies' mediaUrl all ask it. It reports whether raw
// is an absolute http(s) URL, at most MaxMediaURLLength long, without user info, spaces, control
// or invisible characters, whose host is a public name or address. The host is read as a resolver
// or browser would read it (case, a trailing dot, fullwidth forms, IPv4 in short, decimal, octal
// or hex form, IPv4-mapped IPv6), because that is how the carrier's fetcher reads it: a loopback,
// private, shared, link-local (cloud metadata) or reserved address, or a name only a local network
// resolves, would never work for the carrier, or worse, point it inside someone's network.
func PublicMediaURL(raw string) bool {
	if raw == "" || len(raw) > MaxMediaURLLength || !utf8.ValidString(raw) || strings.ContainsFunc(raw, unsafeRune) {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil || !validPort(u.Port()) {
		return false
	}
	host := u.Hostname()
	if strings.Contains(host, ":") { // only a bracketed IPv6 literal has colons
		addr, err := netip.ParseAddr(host)
		return err == nil && addr.Zone() == "" && publicAddr(addr)
	}
	name, ok := lookupName(host)
	if !ok {
		return false
	}
	if addr, isNum, ok := parseIPv4(name); isNum {
		return ok && publicAddr(addr)
	}
	return publicName(name)
}

// unsafeRune is a character no media URL needs raw and some parsers drop or split on: white
// space, control and invisible format characters, and the backslash browsers read as "/".
func unsafeRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.Cc, unicode.Cf) || r == '\\'
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

// lookup maps a host name as resolvers do (UTS #46: case, fullwidth letters, digits and dots),
// without refusing the hyphens and underscores real CDN names carry.
var lookup = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.CheckHyphens(false), idna.StrictDomainName(false), idna.BidiRule())

// lookupName is host as the ASCII name a resolver looks up, its trailing dot dropped; ok is
// false for a name no resolver would take (empty labels, labels starting or ending with a
// hyphen, characters outside [a-z0-9-_]).
func lookupName(host string) (name string, ok bool) {
	name, err := lookup.ToASCII(host)
	if err != nil {
		return "", false
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' || strings.ContainsFunc(label, func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_'
		}) {
			return "", false
		}
	}
	return name, true
}

// parseIPv4 reads name as an IPv4 address the way inet_aton and the WHATWG URL standard do:
// a name whose last label is a number (digits, or 0x and hex digits) is an address (isNum), of
// one to four parts, each decimal, octal (leading 0) or hex (0x), the last filling the
// remaining bytes: 127.1, 2130706433 and 0x7f.1 are all 127.0.0.1. ok is false for a number
// that is no address (1.2.3.4.5, 256.1.1.1, 08).
func parseIPv4(name string) (addr netip.Addr, isNum, ok bool) {
	parts := strings.Split(name, ".")
	if !endsInNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, false
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Part(p)
		rest := 8 * (4 - i) // bits the last part may fill
		switch {
		case !ok:
			return netip.Addr{}, true, false
		case i < len(parts)-1 && n > 255, i == len(parts)-1 && n >= 1<<rest:
			return netip.Addr{}, true, false
		case i < len(parts)-1:
			v |= n << (rest - 8)
		default:
			v |= n
		}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, true
}

func endsInNumber(label string) bool {
	isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
	if h, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return !strings.ContainsFunc(h, func(r rune) bool { return !isDigit(r) && (r < 'a' || r > 'f') })
	}
	return label != "" && !strings.ContainsFunc(label, func(r rune) bool { return !isDigit(r) })
}

// ipv4Part is one part of an IPv4 address in its base; ok is false if it is not one.
func ipv4Part(p string) (n uint64, ok bool) {
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		if p = p[2:]; p == "" {
			return 0, true
		}
		base = 16
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	if p == "" || p[0] == '+' || p[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(p, base, 64)
	return n, err == nil
}

// nonPublic are the IPv4 and IPv6 blocks a carrier must not be sent to beyond what
// netip.Addr's own predicates catch: this network, shared address space (CGNAT, where some
// clouds put their metadata service), IETF protocol assignments, documentation, benchmarking,
// the 6to4 relay and reserved space; in IPv6, the IETF, Teredo, documentation and 6to4 blocks
// (the last two embed IPv4 addresses of any kind).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("3fff::/20"),
}

// globalUnicast6 is the only IPv6 space allocated for the public internet; everything outside
// it (loopback, IPv4-compatible, NAT64, ULA fc00::/7, link-local fe80::/10, multicast) is not.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// publicAddr reports whether addr is one the public internet routes to. An IPv4-mapped IPv6
// address is judged as the IPv4 address it is.
func publicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() || (addr.Is6() && !globalUnicast6.Contains(addr)) {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// localTLDs are top-level names that only a local network, a cluster or a cloud's own resolver
// answers (RFC 6761, RFC 6762, ICANN's .internal, home.arpa, Kubernetes' .svc).
var localTLDs = []string{"localhost", "local", "localdomain", "internal", "intranet", "lan", "home", "corp", "private", "arpa", "svc"}

// metadataNames are the names of cloud metadata services that a suffix does not already catch.
var metadataNames = []string{"metadata.goog", "metadata.tencentyun.com"}

// publicName reports whether name (as lookupName returns it) can be a public host: a dotted
// name under none of localTLDs and none of metadataNames. A bare name (intranet,
// metadata, instance-data) resolves only inside a network.
func publicName(name string) bool {
	if !strings.Contains(name, ".") {
		return false
	}
	for _, n := range metadataNames {
		if name == n || strings.HasSuffix(name, "."+n) {
			return false
		}
	}
	tld := name[strings.LastIndexByte(name, '.')+1:]
	return !slices.Contains(localTLDs, tld)
}
