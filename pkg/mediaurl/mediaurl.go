// Package mediaurl decides which media URLs a customer may hand Chorus to send: the carrier
// fetches them from the public internet, so one services accept, all accept.
package mediaurl

import (
	"net"
	"net/url"
	"strings"
)

// MaxLen is the longest media URL accepted (carriers refuse longer ones).
const MaxLen = 2048

// Public reports whether raw is an absolute http(s) URL, at most MaxLen long, without user
// info, whose host is a dotted name or a public address: a loopback, private or link-local
// address would never work for the carrier, or worse, point it inside someone's network.
func Public(raw string) bool {
	if len(raw) > MaxLen {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast())
	}
	return strings.Contains(host, ".")
}
