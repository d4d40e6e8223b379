package keywords

import "testing"

// Every word of the list is read whole, in any case and spacing; words that only contain one
// are not keywords.
func TestDetect(t *testing.T) {
	for in, want := range map[string]Kind{
		" Stop ": OptOut, "opt-out": OptOut, "unsubscribe": OptOut, "END": OptOut, "quit!": OptOut,
		"Start": OptIn, "unstop": OptIn, "help": Help, "INFO": Help,
		"stops": None, "stop it": None, "yes": None, "": None,
	} {
		if got, _ := Detect(in); got != want {
			t.Errorf("Detect(%q) = %v, want %v", in, got, want)
		}
	}
}
