// Package egress is how webhooks reach their endpoints: only public addresses (never private,
// loopback, link-local, shared or metadata ones, unless loopback is allowed for local
// development), checked when an endpoint is registered and again on every connection, after
// name resolution, so a name that later resolves inward is refused at connect time; no
// redirects followed, no proxy, a bounded wait.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrForbiddenAddress is a target address webhooks may not reach.
var ErrForbiddenAddress = errors.New("address not allowed")

// blocked are the ranges that are not the public internet besides those netip classifies
// (loopback, private, link-local, multicast, unspecified): shared address space (carrier NAT,
// and some clouds' metadata at 100.100.100.200), "this network", IETF protocol assignments,
// benchmarking, documentation, reserved, and the NAT64 prefix that maps onto IPv4.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// Policy says which addresses may be reached.
type Policy struct {
	// AllowLoopback admits 127.0.0.0/8 and ::1 (CHORUS_WEBHOOKS_ALLOW_LOOPBACK): the local
	// stack's receivers. Off in production.
	AllowLoopback bool
}

// Check refuses an address that is not public.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap()
	if ip.IsLoopback() && p.AllowLoopback {
		return nil
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ip)
	}
	for _, b := range blocked {
		if b.Contains(ip) {
			return fmt.Errorf("%w: %s", ErrForbiddenAddress, ip)
		}
	}
	return nil
}

// CheckURL parses an endpoint URL (absolute http or https, a host, no credentials) and
// refuses it unless every address its host resolves to is allowed. The answer is a message
// for the API's field error.
func (p Policy) CheckURL(ctx context.Context, raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.Opaque != "" {
		return "must be an absolute http or https URL", false
	}
	if u.User != nil {
		return "must not carry credentials", false
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
		return "host does not resolve", false
	}
	for _, ip := range addrs {
		if p.Check(ip) != nil {
			return "must be a public address (not private, loopback, link-local or metadata)", false
		}
	}
	return "", true
}

// control refuses, at connect time, a connection to an address the policy does not allow.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	return p.Check(ap.Addr())
}

// Client is the HTTP client of deliveries: connections only to allowed addresses, no proxy,
// redirects answered as they are (a 3xx is not a 2xx), timeout for the whole exchange.
func (p Policy) Client(timeout time.Duration, maxConnsPerHost int) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        1000,
			MaxIdleConnsPerHost: maxConnsPerHost,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
