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

// A sign-up keyword may not be a compliance keyword in any spelling the inbound reader
// accepts, nor YES, which carriers take as an opt-in before we see it.
func TestReserved(t *testing.T) {
	for in, want := range map[string]bool{
		"STOP": true, "stop": true, "Help": true, "INFO": true, "unstop": true, "YES": true,
		"STOP2": true, "OptOut": true, "JOIN": false, "PIZZA4": false, "STOPS": false,
	} {
		if got := Reserved(in); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", in, got, want)
		}
	}
}

// Case, spacing, punctuation and full-width forms fold away; digits stay; a text longer
// than the bound folds to nothing.
func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		" join! ": "JOIN", "Pizza 4": "PIZZA4", "ＪＯＩＮ": "JOIN", "join us now please": "", "": "",
	} {
		if got := Fold(in, 12); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}
