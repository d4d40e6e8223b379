package classify

import (
	"strings"
	"sync"

	"github.com/jonreiter/govader"
)

// Sentiment labels, from VADER's compound score.
const (
	SentimentPositive = "positive"
	SentimentNegative = "negative"
	SentimentNeutral  = "neutral"
)

// sentimentThreshold is the VADER paper's cut-off between neutral and polar compound scores.
const sentimentThreshold = 0.05

// analyzer parses VADER's lexicon (about 7,500 entries) once, on first use. Scoring only reads
// it, so one analyzer serves every goroutine.
var analyzer = sync.OnceValue(govader.NewSentimentIntensityAnalyzer)

// compound returns VADER's compound score of text, in [-1, 1]. Whitespace runs are collapsed
// first because the Go port splits on single spaces where the reference splits on any
// whitespace, and SMS text often holds newlines.
func compound(text string) float64 {
	return analyzer().PolarityScores(strings.Join(strings.Fields(text), " ")).Compound
}

func sentimentOf(score float64) string {
	switch {
	case score >= sentimentThreshold:
		return SentimentPositive
	case score <= -sentimentThreshold:
		return SentimentNegative
	default:
		return SentimentNeutral
	}
}
