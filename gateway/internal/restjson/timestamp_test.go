package restjson

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Timestamps and durations across their whole range, and their edges, are written as protojson
// writes them.
func TestTimestampsAndDurationsAsProtojson(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	nanos := []int64{0, 1, 10, 999, 1000, 1e6, 120e6, 999999999, 123456789, 100000000}
	secs := []int64{minTimestampSeconds, maxTimestampSeconds, 0, -1, 1, 951782400, 946684799, 4107542400}
	for range 20000 {
		secs = append(secs, minTimestampSeconds+r.Int64N(maxTimestampSeconds-minTimestampSeconds+1))
	}
	for i, s := range secs {
		n := nanos[i%len(nanos)]
		if i >= 8 && i%3 == 0 {
			n = r.Int64N(maxNanos + 1)
		}
		ts := &timestamppb.Timestamp{Seconds: s, Nanos: int32(n)}
		want, err := Options.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendTimestampValue(nil, s, n)
		if !ok || string(got) != string(want) {
			t.Fatalf("%d.%09d: got %s (%v), protojson %s", s, n, got, ok, want)
		}
		ds := s % maxSecondsInDuration
		dn := n
		if ds < 0 {
			dn = -n
		}
		d := &durationpb.Duration{Seconds: ds, Nanos: int32(dn)}
		want, err = Options.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, ok = appendDurationValue(nil, ds, dn)
		if !ok || string(got) != string(want) {
			t.Fatalf("duration %d.%09d: got %s (%v), protojson %s", ds, dn, got, ok, want)
		}
	}
}

// indexNeedEscape finds what a rune-by-rune scan finds, wherever in an eight-byte block it is.
func TestIndexNeedEscape(t *testing.T) {
	t.Parallel()
	slow := func(s string) int {
		for i, r := range s {
			if r < ' ' || r == '\\' || r == '"' || r == utf8.RuneError {
				return i
			}
		}
		return len(s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", "0", " ", "~", "\x7f", "\x1f", "\x00", "\"", "\\", "!", "#", "[", "]", "é", "😀", "\ufffd", "\xff", "\x80"}
	for range 50000 {
		var s string
		for range r.IntN(40) {
			if r.IntN(10) == 0 {
				s += alphabet[r.IntN(len(alphabet))]
			} else {
				s += alphabet[r.IntN(5)]
			}
		}
		if got, want := indexNeedEscape(s), slow(s); got != want {
			t.Fatalf("%q: %d, want %d", s, got, want)
		}
	}
}
