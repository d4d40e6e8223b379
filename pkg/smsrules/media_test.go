package smsrules_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/smsrules"
)

func TestPublicMediaURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://cdn.example.com/a.png":                                             true,
		"http://example.com/a.gif?x=1":                                              true,
		"HTTPS://CDN.Example.COM/a.png":                                             true,
		"https://cdn.example.com./a.png":                                            true, // a trailing dot is the same name
		"https://example.com:8443/a.png":                                            true,
		"https://r3---sn-abc.googlevideo.com/v":                                     true,
		"https://my_bucket.example.com/a.png":                                       true,
		"https://пример.рф/a.png":                                                   true,
		"https://xn--e1afmkfd.xn--p1ai/a.png":                                       true,
		"https://example.com/a%20b.png":                                             true, // an escaped space is fine
		"https://93.184.215.14/a.png":                                               true,
		"https://1.1.1.1/a.png":                                                     true,
		"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/":                         true,
		"https://[::ffff:93.184.215.14]/a.png":                                      true, // IPv4-mapped: judged as the IPv4
		"https://example.com/" + strings.Repeat("a", smsrules.MaxMediaURLLength-20): true,

		// Not an absolute http(s) URL, or not a well-formed one.
		"":                                  false,
		"cdn.example.com/a.png":             false,
		"ftp://example.com/a.png":           false,
		"javascript:alert(1)":               false,
		"http:example.com/a.png":            false, // opaque
		"https:///a.png":                    false,
		"https://user:pw@example.com/a.png": false,
		"https://example.com:0/a.png":       false,
		"https://example.com:65536/a.png":   false,
		"https://example.com/" + strings.Repeat("a", smsrules.MaxMediaURLLength): false,
		"https://exa..mple.com/a.png":                                            false,
		"https://-.com/a.png":                                                    false,
		"https://exa$mple.com/a.png":                                             false,
		"https://example.com/\xff.png":                                           false,

		// Spaces, control and invisible characters anywhere; the backslash browsers read as "/".
		"https://example.com/a b.png":       false,
		" https://example.com/a.png":        false,
		"https://example.com/a.png ":        false,
		"https://example.com/a.png\n":       false,
		"https://example.com/a\t.png":       false,
		"https://example.com/a\x00.png":     false,
		"https://example.com/a\x7f.png":     false,
		"https://example.com/a\u00a0.png":   false,
		"https://example.com/a\u3000.png":   false,
		"https://exa\u200bmple.com/a.png":   false,
		"https://example.com/\u202egnp.a":   false,
		"https://example.com\\@127.0.0.1/":  false,
		"https://example.com/a\\b.png":      false,
		"https://example.com/a.png#\u2028x": false,

		// Local names, whatever their case or trailing dot.
		"http://localhost/a.png":                 false,
		"HTTP://LOCALHOST./a":                    false,
		"http://localhost../a":                   false,
		"http://ｌｏｃａｌｈｏｓｔ/a":                     false, // fullwidth letters map to localhost
		"http://media.localhost/a.png":           false,
		"http://printer.local/a.png":             false,
		"http://printer.LOCAL./a.png":            false,
		"http://intranet/a.png":                  false, // a bare name resolves only inside a network
		"http://db.corp/a.png":                   false,
		"http://router.home.arpa/a.png":          false,
		"http://1.0.0.127.in-addr.arpa/a":        false,
		"http://api.default.svc/a.png":           false,
		"http://api.default.svc.cluster.local/a": false,

		// Cloud metadata services, by name and by address.
		"http://metadata.google.internal/a":                false,
		"http://METADATA.GOOGLE.INTERNAL./computeMetadata": false,
		"http://metadata/a":                                false,
		"http://instance-data/latest/meta-data/":           false,
		"http://instance-data.ec2.internal/latest/":        false,
		"http://metadata.goog/a":                           false,
		"http://metadata.tencentyun.com/latest/":           false,
		"http://169.254.169.254/latest/meta-data/":         false,
		"http://[fd00:ec2::254]/latest/meta-data/":         false,
		"http://100.100.100.200/latest/meta-data/":         false, // Alibaba, in 100.64.0.0/10

		// IPv4 in every form a resolver takes.
		"http://127.0.0.1/a.png":        false,
		"http://127.0.0.1./a.png":       false,
		"http://127.1/a":                false,
		"http://127.0.1/a":              false,
		"http://2130706433/a":           false,
		"http://0x7f.1/a":               false,
		"http://0X7F.0.0.1/a":           false,
		"http://0x7f000001/a":           false,
		"http://017700000001/a":         false,
		"http://0177.0.0.1/a":           false,
		"http://１２７.０.０.１/a":            false, // fullwidth digits
		"http://127。0。0。1/a":            false, // ideographic full stops
		"http://3232235521/a":           false, // 192.168.0.1
		"http://0/a":                    false,
		"http://0.0.0.0/a.png":          false,
		"http://0x/a":                   false,
		"http://1.2.3.4.5/a":            false, // a number, but no address
		"http://256.1.1.1/a":            false,
		"http://1.2.3.08/a":             false,
		"http://example.123/a":          false,
		"http://99999999999999999999/a": false,
		"http://10.1.2.3/a.png":         false,
		"http://172.16.0.1/a.png":       false,
		"http://172.31.255.255/a":       false,
		"http://192.168.0.10/a.png":     false,
		"http://100.64.0.1/a":           false,
		"http://100.127.255.255/a":      false,
		"http://169.254.0.1/a":          false,
		"http://192.0.0.8/a":            false,
		"http://192.0.2.1/a":            false,
		"http://198.18.0.1/a":           false,
		"http://198.51.100.1/a":         false,
		"http://203.0.113.1/a":          false,
		"http://224.0.0.1/a":            false,
		"http://239.255.255.250/a":      false,
		"http://240.0.0.1/a":            false,
		"http://255.255.255.255/a":      false,

		// IPv6.
		"http://[::1]/a.png":                false,
		"http://[0:0:0:0:0:0:0:1]/a":        false,
		"http://[::]/a":                     false,
		"http://[::ffff:127.0.0.1]/a":       false,
		"http://[::ffff:7f00:1]/a":          false,
		"http://[::ffff:169.254.169.254]/a": false,
		"http://[::127.0.0.1]/a":            false, // IPv4-compatible
		"http://[64:ff9b::7f00:1]/a":        false, // NAT64
		"http://[2002:7f00:1::]/a":          false, // 6to4
		"http://[2001:0:4136:e378::1]/a":    false, // Teredo
		"http://[2001:db8::1]/a":            false,
		"http://[fc00::1]/a":                false,
		"http://[fd12:3456::1]/a":           false,
		"http://[fe80::1]/a":                false,
		"http://[fe80::1%25eth0]/a":         false,
		"http://[febf::1]/a":                false,
		"http://[fec0::1]/a":                false,
		"http://[ff02::1]/a":                false,
	} {
		assert.Equal(t, want, smsrules.PublicMediaURL(raw), "%q", raw)
	}
}

func FuzzPublicMediaURL(f *testing.F) {
	f.Add("https://cdn.example.com/a.png")
	f.Add("http://[::1]:80/")
	f.Add("http://0x7f.1/")
	f.Fuzz(func(t *testing.T, raw string) {
		if !smsrules.PublicMediaURL(raw) {
			return
		}
		if len(raw) > smsrules.MaxMediaURLLength {
			t.Fatalf("accepted a URL of %d bytes", len(raw))
		}
		if strings.ContainsAny(raw, " \t\r\n\\") {
			t.Fatalf("accepted %q with a space, control character or backslash", raw)
		}
		if !strings.HasPrefix(strings.ToLower(raw), "http://") && !strings.HasPrefix(strings.ToLower(raw), "https://") {
			t.Fatalf("accepted %q, not http(s)", raw)
		}
	})
}
