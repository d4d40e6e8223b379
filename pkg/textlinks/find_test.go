package textlinks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// found is a span as the tests spell it: the address as written and the URL it stands for.
type found struct{ written, url string }

func same(urls ...string) []found {
	var fs []found
	for _, u := range urls {
		fs = append(fs, found{u, u})
	}
	return fs
}

func TestFind(t *testing.T) {
	tests := []struct {
		name, text string
		want       []found
	}{
		{"trailing full stop", "see https://example.com/a?b=1.", same("https://example.com/a?b=1")},
		{"in parentheses", "(https://x.io/y)", same("https://x.io/y")},
		{"balanced parentheses kept", "https://en.wikipedia.org/wiki/Foo_(bar)",
			same("https://en.wikipedia.org/wiki/Foo_(bar)")},
		{"balanced parentheses inside parentheses", "(see https://en.wikipedia.org/wiki/Foo_(bar)).",
			same("https://en.wikipedia.org/wiki/Foo_(bar)")},
		{"two addresses", "Tickets: http://a.example.com/t, map: https://b.example.org/m!",
			same("http://a.example.com/t", "https://b.example.org/m")},
		{"www form", "Visit www.example.com/menu today",
			[]found{{"www.example.com/menu", "https://www.example.com/menu"}}},
		{"upper-case scheme", "HTTPS://Example.COM/Path?",
			[]found{{"HTTPS://Example.COM/Path", "https://Example.COM/Path"}}},
		{"quoted", `Click "https://x.io/a" or ‘https://x.io/b’`,
			same("https://x.io/a", "https://x.io/b")},
		{"full-width punctuation", "链接：https://x.io/a。", same("https://x.io/a")},
		{"ends at angle bracket", "<https://x.io/a>", same("https://x.io/a")},
		{"port, query and fragment", "https://x.io:8443/a?b=c&d=e#f;",
			same("https://x.io:8443/a?b=c&d=e#f")},
		{"unicode around and inside", "Привет! Смотри https://пример.рф/путь — 🎉",
			same("https://пример.рф/путь")},
		{"IPv4 host", "http://192.168.0.1/admin", same("http://192.168.0.1/admin")},
		{"no address", "See you at 5. Reply STOP to opt out.", nil},
		{"email", "Write to ann@example.com or ann@www.example.com", nil},
		{"bare domain", "example.com has it", nil},
		{"host without dot", "http://localhost/x and https://intranet", nil},
		{"scheme only", "http:// https://. www.", nil},
		{"prefix inside a word", "awww.example.com xhttps://example.com", nil},
		{"bad port", "http://example.com:port/x", nil},
		{"longest kept", "see https://x.io/" + strings.Repeat("a", MaxURLBytes-len("https://x.io/")) + ".",
			same("https://x.io/" + strings.Repeat("a", MaxURLBytes-len("https://x.io/")))},
		{"too long", "see https://x.io/" + strings.Repeat("a", MaxURLBytes) + " and www.example.com",
			[]found{{"www.example.com", "https://www.example.com"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []found
			for _, s := range Find(tt.text) {
				got = append(got, found{tt.text[s.Start:s.End], s.URL})
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
