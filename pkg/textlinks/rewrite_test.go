package textlinks

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRewrite(t *testing.T) {
	var asked []string
	short := func(u string) (string, error) {
		asked = append(asked, u)
		return "https://chor.us/" + string(rune('a'+len(asked)-1)), nil
	}
	got, err := Rewrite("Menu: www.example.com/menu. Tickets (https://x.io/t)!", short)
	require.NoError(t, err)
	assert.Equal(t, "Menu: https://chor.us/a. Tickets (https://chor.us/b)!", got)
	assert.Equal(t, []string{"https://www.example.com/menu", "https://x.io/t"}, asked)
}

func TestRewriteWithoutAddressesKeepsText(t *testing.T) {
	got, err := Rewrite("Reply YES to confirm, ann@example.com", func(string) (string, error) {
		return "", errors.New("must not be called")
	})
	require.NoError(t, err)
	assert.Equal(t, "Reply YES to confirm, ann@example.com", got)
}

func TestRewriteReportsShortenerFailure(t *testing.T) {
	boom := errors.New("store down")
	_, err := Rewrite("see https://x.io/a", func(string) (string, error) { return "", boom })
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "https://x.io/a")
}

func FuzzRewrite(f *testing.F) {
	for _, s := range []string{
		"see https://example.com/a?b=1.", "(https://x.io/y)",
		"https://en.wikipedia.org/wiki/Foo_(bar)",
		"www.example.com and HTTP://A.B/c", "ann@example.com", "Привет https://пример.рф/путь 🎉",
		"http://a.com,https://b.com", "\xffhttps://x.io\xfe", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spans := Find(text)
		prev := 0
		for _, s := range spans {
			if s.Start < prev || s.End <= s.Start || s.End > len(text) {
				t.Fatalf("Find(%q): span %+v out of order or bounds", text, s)
			}
			cuts := utf8.ValidString(text) &&
				!(utf8.ValidString(text[:s.Start]) && utf8.ValidString(text[s.End:]))
			if cuts || !utf8.ValidString(text[s.Start:s.End]) {
				t.Fatalf("Find(%q): span %+v cuts a character", text, s)
			}
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				t.Fatalf("Find(%q): span %+v is not an absolute URL", text, s)
			}
			prev = s.End
		}

		// Giving back each address as written must reproduce the text.
		calls := 0
		same, err := Rewrite(text, func(u string) (string, error) {
			s := spans[calls]
			calls++
			if u != s.URL {
				t.Fatalf("Rewrite(%q) shortened %q, want %q", text, u, s.URL)
			}
			return text[s.Start:s.End], nil
		})
		if err != nil || same != text {
			t.Fatalf("Rewrite(%q) with written addresses = %q, %v", text, same, err)
		}

		const marker = "\x00LINK\x00"
		marked, err := Rewrite(text, func(string) (string, error) { return marker, nil })
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		prev = 0
		for _, s := range spans {
			want.WriteString(text[prev:s.Start] + marker)
			prev = s.End
		}
		want.WriteString(text[prev:])
		if marked != want.String() {
			t.Fatalf("Rewrite(%q) = %q, want %q", text, marked, want.String())
		}
	})
}
