package signup

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A keyword is 1-20 ASCII letters and digits, stored upper-case; carrier keywords in any
// spelling the inbound reader accepts are refused.
func TestWord(t *testing.T) {
	for in, want := range map[string]string{" join ": "JOIN", "Pizza4": "PIZZA4", "VIP2026": "VIP2026"} {
		got, problem := Word(in)
		assert.Empty(t, problem, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "join us", "join!", strings.Repeat("A", 21), "ÉTÉ"} {
		_, problem := Word(in)
		assert.Contains(t, problem, "letters and digits", in)
	}
	for _, in := range []string{"STOP", "stop", "Help", "INFO", "START", "unstop", "YES", "Cancel", "STOP2", "OPTOUT"} {
		_, problem := Word(in)
		assert.Contains(t, problem, "carrier keyword", in)
	}
}

// An inbound text matches in any case, spacing and punctuation; a long text matches nothing.
func TestMatch(t *testing.T) {
	assert.Equal(t, "JOIN", Match(" Join! "))
	assert.Equal(t, "PIZZA4", Match("pizza 4"))
	assert.Equal(t, "", Match("I would like to join your list please"))
}

// Bare words get every required part: brand, frequency, rates notice, STOP and HELP.
func TestConfirmationAddsWhatIsMissing(t *testing.T) {
	got := Confirmation("Joe's Pizza", "Thanks for joining our VIP club!", "Up to 4 msgs/month")
	assert.Equal(t, "Joe's Pizza: Thanks for joining our VIP club! Up to 4 msgs/month. Msg & data rates may apply. Reply STOP to opt out, HELP for help.", got)
}

// What the organization's words already say is not said twice.
func TestConfirmationKeepsWhatIsThere(t *testing.T) {
	own := "Welcome to JOE'S PIZZA deals, up to 4 msgs/month. Message and data rates may apply. Text HELP for help, STOP to end."
	assert.Equal(t, own, Confirmation("Joe's Pizza", own, "Up to 4 msgs/month"))
	got := Confirmation("Joe's Pizza", "Joe's Pizza: welcome. Reply STOP to cancel", "4 msgs/mo")
	assert.Equal(t, "Joe's Pizza: welcome. Reply STOP to cancel. 4 msgs/mo. Msg & data rates may apply. Reply STOP to opt out, HELP for help.", got,
		"STOP without HELP gets the whole instruction")
	assert.Equal(t, "Joe's Pizza: It's cafe time. Weekly. Msg & data rates may apply. Reply STOP to opt out, HELP for help.",
		Confirmation("Joe's Pizza", "It’s café time", "Weekly"), "normalized as every outgoing text")
}

func TestFrequencyAndLength(t *testing.T) {
	f, problem := Frequency("  Up to 4 msgs/month ")
	assert.Equal(t, "Up to 4 msgs/month", f)
	assert.Empty(t, problem)
	_, problem = Frequency(" ")
	assert.NotEmpty(t, problem)
	_, problem = Frequency(strings.Repeat("x", MaxFrequencyLen+1))
	assert.NotEmpty(t, problem)
	assert.Empty(t, CheckLength(strings.Repeat("x", 1600)))
	assert.Contains(t, CheckLength(strings.Repeat("x", 1601)), "1601 characters")
}
