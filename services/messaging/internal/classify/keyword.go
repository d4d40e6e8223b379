package classify

import "github.com/chorus-sms/chorus/pkg/keywords"

// Keyword is the carrier-compliance keyword an inbound message consists of; the list lives in
// pkg/keywords, which polls also read to refuse options that are keywords.
type Keyword = keywords.Kind

// Keywords, in the order carriers expect them to be honoured.
const (
	KeywordNone   = keywords.None
	KeywordOptOut = keywords.OptOut
	KeywordOptIn  = keywords.OptIn
	KeywordHelp   = keywords.Help
)

// DetectKeyword reports whether the whole of text is a compliance keyword, and which canonical
// word it matched (see keywords.Detect).
func DetectKeyword(text string) (Keyword, string) { return keywords.Detect(text) }
