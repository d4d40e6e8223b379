package autoreply

// MinShare is the least share of an FAQ question's words a message must contain to match it.
const MinShare = 0.5

// Match returns the index of the question that text asks best, or -1 when none matches.
//
// Both are reduced to their topic words (contentWords: case, accents, punctuation, English
// and Spanish function words and greetings ignored, one English ending dropped). A question's
// score is the share of its topic words found in text; it matches from MinShare up. The
// highest share wins; at an equal share the question with more words in common; then the
// earlier one. A question with no topic words never matches. So "Is there parking nearby?"
// matches "Where can I park?" (park: 1 of 1), "When does it start?" does not match "What time
// does the show start?" (start: 1 of 3), and a message in another language matches only a
// question that shares its words.
func Match(questions []string, text string) int {
	msg := contentWords(text)
	best, bestShare, bestShared := -1, 0.0, 0
	for i, q := range questions {
		words := contentWords(q)
		shared := 0
		for w := range words {
			if msg[w] {
				shared++
			}
		}
		if shared == 0 {
			continue
		}
		share := float64(shared) / float64(len(words))
		if share < MinShare {
			continue
		}
		if share > bestShare || (share == bestShare && shared > bestShared) {
			best, bestShare, bestShared = i, share, shared
		}
	}
	return best
}
