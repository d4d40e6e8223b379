package senders

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPickKeepsTheLastSenderThenTheAreaCodeThenTheLeastLoaded(t *testing.T) {
	numbers := []Number{{Number: "+13125550100"}, {Number: "+12125550100", Load: 5}, {Number: "+14155550100"}}
	phones := []string{
		"+12125551234", // New York: the pool's 212 number, busy as it is
		"+16175551234", // Boston: no 617 number, the least loaded once the others are placed
		"+16175551235", // again: the first of the two least loaded
		"+14155551234", // replied to the Chicago number before: it keeps it
		"+447700900123",
	}
	last := []string{"", "", "", "+13125550100", ""}
	got := Pick(numbers, phones, last)
	assert.Equal(t, []int{1, 2, 0, 0, 2}, got)
	assert.Equal(t, []int{2, 6, 2}, []int{numbers[0].Load, numbers[1].Load, numbers[2].Load})
}

func TestPickSpreadsEvenly(t *testing.T) {
	numbers := make([]Number, 3)
	for i := range numbers {
		numbers[i].Number = "+1312555010" + string(rune('0'+i))
	}
	phones := make([]string, 300)
	for i := range phones {
		phones[i] = "+44770090" + string(rune('0'+i%10)) + "123"
	}
	Pick(numbers, phones, nil)
	for _, n := range numbers {
		assert.Equal(t, 100, n.Load)
	}
}

func TestPickIgnoresALastSenderOutOfThePool(t *testing.T) {
	numbers := []Number{{Number: "+13125550100", Load: 1}, {Number: "+13125550101"}}
	assert.Equal(t, []int{1}, Pick(numbers, []string{"+16175551234"}, []string{"+19995550100"}))
}
