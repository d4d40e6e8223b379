package gateway

import (
	"net/url"
	"testing"
	"unicode/utf8"
)

// FuzzParseForm checks that the order-keeping form parser reads exactly what url.ParseQuery
// reads, and refuses what it refuses or what is not UTF-8.
func FuzzParseForm(f *testing.F) {
	for _, seed := range []string{
		"To=%2B12025550143&From=%2B1312&Body=Hi+there", "a=1&a=2&&b", "=x&y=", "a=1;b=2", "Body=%zz", "Body=%FF", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		params, err := parseForm(body)
		want, wantErr := url.ParseQuery(body)
		if wantErr != nil {
			if err == nil {
				t.Fatalf("parseForm(%q) accepted what url.ParseQuery refuses: %v", body, wantErr)
			}
			return
		}
		valid := true
		for k, vs := range want {
			valid = valid && utf8.ValidString(k)
			for _, v := range vs {
				valid = valid && utf8.ValidString(v)
			}
		}
		if !valid {
			if err == nil {
				t.Fatalf("parseForm(%q) accepted invalid UTF-8", body)
			}
			return
		}
		if err != nil {
			t.Fatalf("parseForm(%q): %v", body, err)
		}
		got := url.Values{}
		for _, p := range params {
			got.Add(p.GetKey(), p.GetValue())
		}
		if got.Encode() != want.Encode() {
			t.Fatalf("parseForm(%q) = %v, url.ParseQuery = %v", body, got, want)
		}
	})
}
