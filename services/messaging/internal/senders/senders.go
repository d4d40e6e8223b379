// Package senders picks the sending number of each message a campaign or poll sends from
// a pool of numbers. A recipient keeps hearing from the number that last exchanged a message
// with them, so their replies stay in one thread on their phone; a new recipient gets a
// number of their own area code when the pool has one (a local number is answered more
// often), else the number given fewest of the source's messages so far, so that the pool's
// numbers, each paced at its own rate, send side by side.
package senders

// Number is a pool number in E.164 and how many of the source's messages it was given.
type Number struct {
	Number string
	Load   int
}

// Pick returns, for each of phones, the index in numbers of the number to send from; last
// holds, per phone, the pool number that last exchanged a message with it ("" for none).
// Recipients with a last sender or a local number are placed first, so that the least busy
// number, which the others get, counts them. numbers must not be empty; their loads grow by
// what Pick gives them.
func Pick(numbers []Number, phones, last []string) []int {
	index := make(map[string]int, len(numbers))
	byArea := map[string][]int{}
	for i, n := range numbers {
		index[n.Number] = i
		if a := areaCode(n.Number); a != "" {
			byArea[a] = append(byArea[a], i)
		}
	}
	out := make([]int, len(phones))
	var rest []int
	for i, p := range phones {
		pick, sticky := -1, false
		if i < len(last) && last[i] != "" {
			pick, sticky = index[last[i]]
		}
		if !sticky {
			local := byArea[areaCode(p)]
			if len(local) == 0 {
				rest = append(rest, i)
				continue
			}
			pick = leastLoaded(numbers, local)
		}
		numbers[pick].Load++
		out[i] = pick
	}
	all := make([]int, len(numbers))
	for i := range all {
		all[i] = i
	}
	for _, i := range rest {
		pick := leastLoaded(numbers, all)
		numbers[pick].Load++
		out[i] = pick
	}
	return out
}

// leastLoaded is the candidate (an index in numbers) with the smallest load, the first of
// those tied.
func leastLoaded(numbers []Number, candidates []int) int {
	best := candidates[0]
	for _, c := range candidates[1:] {
		if numbers[c].Load < numbers[best].Load {
			best = c
		}
	}
	return best
}

// areaCode is a North American number's area code ("+1" and ten digits), "" for any other:
// elsewhere a prefix says too little about where a number is used.
func areaCode(e164 string) string {
	if len(e164) != 12 || e164[:2] != "+1" {
		return ""
	}
	return e164[2:5]
}
