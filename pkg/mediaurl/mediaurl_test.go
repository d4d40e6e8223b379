package mediaurl_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/mediaurl"
)

func TestPublic(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://cdn.example.com/a.png":                     true,
		"http://example.com/a.gif?x=1":                      true,
		"https://93.184.215.14/a.png":                       true,
		"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/": true,
		"":                                         false,
		"cdn.example.com/a.png":                    false, // not absolute
		"ftp://example.com/a.png":                  false,
		"javascript:alert(1)":                      false,
		"https://user:pw@example.com/a.png":        false,
		"http://localhost/a.png":                   false,
		"http://media.localhost/a.png":             false,
		"http://printer.local/a.png":               false,
		"http://intranet/a.png":                    false, // a bare name resolves only inside a network
		"http://127.0.0.1/a.png":                   false,
		"http://10.1.2.3/a.png":                    false,
		"http://192.168.0.10/a.png":                false,
		"http://169.254.169.254/latest/meta-data/": false, // cloud metadata
		"http://[::1]/a.png":                       false,
		"http://0.0.0.0/a.png":                     false,
		"https://example.com/" + strings.Repeat("a", mediaurl.MaxLen): false,
	} {
		assert.Equal(t, want, mediaurl.Public(raw), raw)
	}
}

func FuzzPublic(f *testing.F) {
	f.Add("https://cdn.example.com/a.png")
	f.Add("http://[::1]:80/")
	f.Fuzz(func(t *testing.T, raw string) {
		if mediaurl.Public(raw) && len(raw) > mediaurl.MaxLen {
			t.Fatalf("accepted a URL of %d bytes", len(raw))
		}
	})
}
