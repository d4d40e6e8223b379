package classify

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The FCC's 2024 consent order lets a contact revoke consent "by any reasonable means", not
// only with a carrier keyword: "please stop texting me" and "bórrenme de la lista" count as
// STOP does. DetectRevocation reads such words with a small rule set rather than a model, so
// that every decision can be explained by the rule that made it.
//
// The text is normalized first: NFKD-folded with accents dropped, lower-cased, apostrophes
// inside words dropped ("don't" is "dont"), and everything else but letters and digits a word
// break. Politeness and time words at either end ("please", "hey", "can you", "anymore",
// "thanks", "por favor", "ya", "más") are set aside; what remains is the core.
//
// A rule is a revocation clause (a revocation verb with a messaging object or the sender
// themself) that may stand anywhere in the core. A match is:
//   - high confidence, acted on as STOP is, when the clause is the whole core or at most
//     maxExtraWords other words stand beside it, none of them a qualifier (see qualifiers:
//     "after 9pm", "about the sale", "but", "her" narrow or redirect the request), and the
//     message is not a question ("can you stop texting me?" is a request, not a question);
//   - low confidence, left to a person, otherwise (a long message that contains the clause, a
//     question, a qualified request), or when the rule is lowOnly;
//   - nothing when the clause is negated ("don't stop texting me", "no dejen de escribirme"),
//     or when a wholeOnly rule (a bare "stop") has any other word beside it: "stop by the store
//     at 5" is no revocation at all.

// Revocation is how surely a message revokes consent in words of its own.
type Revocation int

// Revocation confidences.
const (
	RevocationNone Revocation = iota
	// RevocationLow is a message that may revoke consent: a person decides.
	RevocationLow
	// RevocationHigh is a message that revokes consent: it is acted on as STOP is.
	RevocationHigh
)

// maxExtraWords is how many words besides the clause a high-confidence revocation may have:
// "stop texting me, I'm not interested" is one; a paragraph that contains "stop texting me"
// is left to a person.
const maxExtraWords = 3

// maxRevocationWords bounds the work done on long messages: later words are not read.
const maxRevocationWords = 200

// revocationRule is one explainable way of revoking consent in words.
type revocationRule struct {
	name string
	// pattern is a sequence of slots (see compileSlots): words separated by "|" are
	// alternatives, "_" joins the words of one alternative, a leading "?" makes the slot
	// optional, "@name" is a word class, and "$" matches only at the end of the core.
	pattern   string
	spanish   bool // negated by "no"/"nunca" rather than "don't"/"never"
	wholeOnly bool // a match with any other word in the core is no match
	lowOnly   bool // a match is never more than low confidence
}

// revocationRules, each with why it exists. A rule's name is recorded as the consent source
// ("text:<name>"), so names are stable.
var revocationRules = []revocationRule{
	// A keyword with politeness around it: "please stop", "STOP STOP", "unsubscribe me
	// please". Whole only: "stop" inside a sentence is usually the verb ("stop by at 5").
	{name: "bare-stop", pattern: "@bare ?@bare ?@bare ?me|it|all|this|that $", wholeOnly: true},
	// "stop texting me", "quit messaging us", "stop contacting this number".
	{name: "stop-messaging", pattern: "@stop @messaging ?@self"},
	// "stop sending me texts", "stop sending these messages".
	{name: "stop-sending", pattern: "@stop sending|sendin ?@self ?@det @noun"},
	// "stop the texts", "stop all these messages", "end these alerts".
	{name: "stop-messages", pattern: "@stop ?@det @noun"},
	// "don't text me", "do not contact this number", "never message me again". The object is
	// required: "I don't text much" says nothing of us.
	{name: "dont-message", pattern: "@dont text|txt|message|msg|contact|sms|spam|email|bother @self"},
	// "don't send me texts", "do not send any more messages".
	{name: "dont-send", pattern: "@dont send ?@self ?@det @noun"},
	// "remove me from this list", "delete my number", "unsubscribe me".
	{name: "remove-me", pattern: "remove|delete|erase|unsubscribe|unsub|unenroll @self ?from|off ?@det ?@list"},
	// "take me off your list", "get me off this list": "take"/"get" need "off".
	{name: "take-me-off", pattern: "take|get|cross|scratch @self off ?@det ?@list"},
	// "opt me out".
	{name: "opt-me-out", pattern: "opt @self out"},
	// "I want to opt out", "I'd like to unsubscribe", "I wish to opt out of these texts".
	{name: "want-opt-out", pattern: "@want opt_out|optout|unsubscribe|unsub|be_removed|be_taken_off|be_unsubscribed"},
	// "no more texts", "no más mensajes".
	{name: "no-more-messages", pattern: "no_more|nothing_more ?@det @noun"},
	{name: "es-no-mas", pattern: "no_mas|nada_mas_de ?@esdet @esnoun", spanish: true},
	// "I don't want these texts", "I no longer want to receive messages".
	{name: "dont-want-messages", pattern: "@dontwant ?to_receive|to_get|receiving|getting|any_more|anymore|more ?@det @noun"},
	// "leave me alone": a revocation or a quarrel; a person decides.
	{name: "leave-me-alone", pattern: "leave @self alone", lowOnly: true},
	// "I never signed up for this": consent is disputed rather than revoked; a person decides.
	{name: "never-signed-up", pattern: "i_never|never|i_didnt|didnt|i_did_not signed_up|sign_up|subscribed|subscribe|opted_in|opt_in|agreed_to|agree_to", lowOnly: true},

	// "ya no me manden mensajes", "no me escriban más", "no me envíen nada". Without a
	// messaging object the verb must end the message: "no me manden el archivo" is no
	// revocation.
	{name: "es-no-me-envien", pattern: "no|nunca me|nos @esverb ?mas ?@esdet ?@esnoun $", spanish: true},
	{name: "es-no-me-envien", pattern: "no|nunca me|nos @esverb ?mas ?@esdet @esnoun", spanish: true},
	// "dejen de enviarme mensajes", "para de escribirme", "paren de mandar mensajes".
	{name: "es-dejen-de", pattern: "@esstop de @esverbme ?mas ?@esdet ?@esnoun", spanish: true},
	// "dejen de mandar mensajes": an infinitive without "me" needs its object.
	{name: "es-dejen-de-enviar", pattern: "@esstop de enviar|mandar|escribir ?mas ?@esdet @esnoun", spanish: true},
	// "quiero darme de baja", "denme de baja", "me doy de baja". "baja el precio" has no "de".
	{name: "es-baja", pattern: "darme|dar|denme|dame|deme|den|doy|darnos|dennos|danos de baja", spanish: true},
	// "bórrenme de la lista", "sáquenme de la lista", "eliminen mi número".
	{name: "es-borrenme", pattern: "@esremoveme ?de ?@esdet ?@eslist", spanish: true},
	{name: "es-borren-mi-numero", pattern: "borren|borra|borre|saquen|saca|saque|quiten|quita|quite|eliminen|elimina|elimine mi_numero|mi_telefono|mi_celular|mi_contacto|mi_nombre", spanish: true},
	// "no quiero recibir más mensajes", "ya no quiero mensajes".
	{name: "es-no-quiero", pattern: "no quiero|deseo ?recibir ?mas ?@esdet @esnoun", spanish: true},
	// "quiero cancelar mi suscripción": of these texts or of a service the organization sells;
	// a person decides.
	{name: "es-cancelar", pattern: "cancelar|cancelen|cancela|cancele|anular mi|mis|la|las|los suscripcion|subscripcion|mensajes", spanish: true, lowOnly: true},
}

// wordClasses are the "@name" slots of the rules.
var wordClasses = map[string]string{
	"stop": "stop|quit|cease|discontinue|end|halt|stop_all",
	// Keywords that, with nothing but politeness around them, are STOP.
	"bare": "stop|stopall|stop_all|unsubscribe|unsub|optout|opt_out",
	// Ways of reaching someone by text, as the object of "stop".
	"messaging": "texting|txting|texing|messaging|msging|msgn|contacting|spamming|emailing|bothering|harassing|hitting_me_up|hmu",
	"self":      "me|us|myself|this_number|my_number|my_phone|my_phone_number|my_cell|this_phone|my_info|my_contact_info",
	"det":       "the|these|those|this|that|your|all|any|any_more|anymore|more|all_the|all_these|all_those|all_your|all_of_these|all_of_your",
	// Things an organization sends, as the object of "stop sending", "no more".
	"noun":     "texts|text|txts|txt|messages|message|msgs|msg|sms|smss|notifications|notification|alerts|alert|reminders|promos|promotions|offers|ads|advertisements|spam|marketing|updates|blasts|stuff|things|crap|junk",
	"list":     "list|lists|mailing_list|texting_list|text_list|sms_list|contact_list|contacts|database|system|everything|texts|messages|it|this|that|here|thing",
	"dont":     "dont|do_not|never|please_dont|pls_dont|plz_dont|dont_ever|do_not_ever",
	"want":     "i_want_to|i_wanna|want_to|wanna|i_would_like_to|id_like_to|i_wish_to|i_need_to|need_to|let_me|how_do_i|i_am_going_to|im_going_to|i_will|ill",
	"dontwant": "i_dont_want|dont_want|i_do_not_want|i_no_longer_want|i_no_longer_wish|i_dont_wish|i_do_not_wish|i_dont_need|i_do_not_need|i_dont_wanna|no_longer_want|i_want_no|we_dont_want",

	"esverb":     "manden|mande|mandes|envien|envie|envies|escriban|escriba|escribas|texteen|textees|contacten|contactes|contacte|molesten|molestes",
	"esverbme":   "enviarme|mandarme|escribirme|textearme|contactarme|molestarme|spamearme|enviarnos|mandarnos|escribirnos|contactarnos",
	"esstop":     "deja|dejen|deje|dejar|para|paren|pare|parale|detengan|detenga|basta",
	"esdet":      "los|las|el|la|sus|tus|su|tu|estos|estas|este|esta|esos|esas|ningun|ninguna|ningunos|mas|otro|otros|de|nada",
	"esnoun":     "mensajes|mensaje|mensajitos|textos|texto|sms|notificaciones|alertas|recordatorios|promociones|ofertas|anuncios|publicidad|spam|nada|cosas",
	"eslist":     "lista|listas|base_de_datos|sistema|contactos|envios|mensajes",
	"esremoveme": "borrenme|borrame|borreme|sacame|saquenme|saqueme|quitenme|quitame|quiteme|eliminenme|eliminame|elimineme|remuevanme|bajenme|excluyanme",
}

// Politeness, wishes and time words at either end of a message, set aside before matching.
// politePrefixes turn a question into a request ("can you stop texting me?").
var (
	leadingFiller  = phrases("please|pls|plz|plez|kindly|hey|hi|hello|ok|okay|just|um|so|seriously|guys|i_said|por_favor|porfa|porfavor|favor|favor_de|hola|oigan|oiga|oye|ya|quiero|quisiera|deseo|me_quiero|queremos|nos_queremos")
	politePrefixes = phrases("can_you|could_you|would_you|will_you|can_u|could_u|would_u|will_u|pueden|puede|puedes|podrian|podria|podrias|me_pueden|me_puede|me_puedes|nos_pueden")
	trailingFiller = phrases("please|pls|plz|thanks|thank_you|thankyou|thx|ty|anymore|any_more|again|ever_again|now|right_now|asap|immediately|already|today|for_good|forever|permanently|at_all|ok|okay|lol|por_favor|porfa|porfavor|gracias|mas|ya|nunca_mas|nunca|ahora|ahora_mismo|de_una_vez|inmediatamente|de_inmediato|nada_mas|por_fa")
	// qualifiers narrow or redirect a request: "stop texting me after 9pm", "about the sale",
	// "but keep the reminders", "stop texting her". Beside one, a clause is low confidence.
	qualifiers = words("after|before|until|till|til|at|during|on|when|while|if|unless|but|except|only|about|for|so|between|weekends|weekdays|night|morning|late|early|her|him|them|his|she|he|they|my_wife|wife|husband|son|daughter|mom|dad|hasta|despues|antes|cuando|mientras|si|pero|excepto|solo|sobre|durante|en|a_las|noche|manana|tarde|ella|el|ellos|su")
	// subjects right before a clause make it a statement, not a demand: "I'll stop texting
	// you", "we stop sending texts at 9".
	subjects = words("i|ill|im|we|well|were|will|shall|gonna|he|she|they|it")
)

// negators, by language, negate a clause they stand right before: "don't stop texting me",
// "no dejen de escribirme". English "no" is an interjection ("No, stop texting me"), not one.
var (
	negatorsEN = words("dont|not|never|didnt|doesnt|wont|cant|cannot|couldnt|shouldnt|wouldnt|aint|isnt|dnt")
	negatorsES = words("no|nunca|ni|jamas")
)

type slot struct {
	alts     [][]string // each alternative's words
	optional bool
	end      bool // "$"
}

type compiledRule struct {
	revocationRule
	slots []slot
}

var compiledRules = compileRules(revocationRules)

func compileRules(rules []revocationRule) []compiledRule {
	out := make([]compiledRule, len(rules))
	for i, r := range rules {
		out[i] = compiledRule{revocationRule: r, slots: compileSlots(r.pattern)}
	}
	return out
}

// compileSlots parses a rule pattern; a malformed one (an unknown word class) panics at start-up.
func compileSlots(pattern string) []slot {
	var slots []slot
	for _, field := range strings.Fields(pattern) {
		if field == "$" {
			slots = append(slots, slot{end: true})
			continue
		}
		s := slot{}
		if strings.HasPrefix(field, "?") {
			s.optional, field = true, field[1:]
		}
		if strings.HasPrefix(field, "@") {
			class, ok := wordClasses[field[1:]]
			if !ok {
				panic("classify: unknown word class " + field)
			}
			field = class
		}
		s.alts = phrases(field)
		slots = append(slots, s)
	}
	return slots
}

// phrases splits "a|b_c" into its alternatives, each a list of words, longest first so a
// longer alternative wins over its prefix.
func phrases(spec string) [][]string {
	var out [][]string
	for _, alt := range strings.Split(spec, "|") {
		out = append(out, strings.Split(alt, "_"))
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// words is the set of the alternatives of spec, joined by spaces.
func words(spec string) map[string]bool {
	set := map[string]bool{}
	for _, alt := range strings.Split(spec, "|") {
		set[strings.ReplaceAll(alt, "_", " ")] = true
	}
	return set
}

// DetectRevocation reports how surely text revokes consent in words of its own, and the name
// of the rule that said so ("" with RevocationNone). A carrier keyword is no concern of it:
// Classify reads keywords first.
func DetectRevocation(text string) (Revocation, string) {
	ws, question := revocationWords(text)
	core, polite := trimFiller(ws)
	if len(core) == 0 {
		return RevocationNone, ""
	}
	// A question mark, or an opening interrogative (see Classify's rule 4), asks rather than
	// demands, unless a polite request prefix was set aside.
	question = !polite && (question || (interrogatives[core[0]] && (len(core) == 1 || core[1] != "not")))
	best, rule := RevocationNone, ""
	for _, r := range compiledRules {
		if c := r.match(core, question); c > best {
			best, rule = c, r.name
		}
	}
	return best, rule
}

// match returns the best confidence of r's matches in core.
func (r compiledRule) match(core []string, question bool) Revocation {
	best := RevocationNone
	for start := range core {
		n, ok := matchSlots(r.slots, core, start)
		if !ok || r.negated(core, start) {
			continue
		}
		extra := append(append([]string(nil), core[:start]...), core[start+n:]...)
		if r.wholeOnly && len(extra) > 0 {
			continue
		}
		c := RevocationHigh
		if r.lowOnly || question || len(extra) > maxExtraWords || hasQualifier(extra) || (start > 0 && subjects[core[start-1]]) {
			c = RevocationLow
		}
		best = max(best, c)
	}
	return best
}

// negated reports whether the words right before start negate the clause there.
func (r compiledRule) negated(core []string, start int) bool {
	if start == 0 {
		return false
	}
	if r.spanish {
		return negatorsES[core[start-1]]
	}
	return negatorsEN[core[start-1]]
}

// matchSlots matches slots against core from start and returns how many words they took.
// Optional slots are tried taken first, then skipped.
func matchSlots(slots []slot, core []string, start int) (int, bool) {
	if len(slots) == 0 {
		return 0, true
	}
	s := slots[0]
	if s.end {
		return 0, start == len(core)
	}
	for _, alt := range s.alts {
		if hasPrefix(core[start:], alt) {
			if n, ok := matchSlots(slots[1:], core, start+len(alt)); ok {
				return len(alt) + n, true
			}
		}
	}
	if s.optional {
		return matchSlots(slots[1:], core, start)
	}
	return 0, false
}

func hasPrefix(ws, prefix []string) bool {
	if len(prefix) > len(ws) {
		return false
	}
	for i, w := range prefix {
		if ws[i] != w {
			return false
		}
	}
	return true
}

// hasQualifier reports whether a qualifier word, or two-word qualifier, is among ws.
func hasQualifier(ws []string) bool {
	for i, w := range ws {
		if qualifiers[w] || (i+1 < len(ws) && qualifiers[w+" "+ws[i+1]]) {
			return true
		}
	}
	return false
}

// trimFiller sets aside filler words at both ends of ws, and reports whether a polite request
// prefix ("can you", "pueden") was among them.
func trimFiller(ws []string) (core []string, polite bool) {
	for changed := true; changed && len(ws) > 0; {
		changed = false
		if n := longestPrefix(ws, leadingFiller); n > 0 {
			ws, changed = ws[n:], true
		}
		if n := longestPrefix(ws, politePrefixes); n > 0 && n < len(ws) {
			ws, changed, polite = ws[n:], true, true
		}
	}
	for changed := true; changed && len(ws) > 0; {
		changed = false
		for _, alt := range trailingFiller {
			if len(alt) < len(ws) && hasPrefix(ws[len(ws)-len(alt):], alt) {
				ws, changed = ws[:len(ws)-len(alt)], true
				break
			}
		}
	}
	return ws, polite
}

// longestPrefix returns the length of the longest alternative ws begins with, 0 for none.
func longestPrefix(ws []string, alts [][]string) int {
	for _, alt := range alts { // longest first
		if hasPrefix(ws, alt) {
			return len(alt)
		}
	}
	return 0
}

// revocationWords normalizes text into words (see the comment at the top of this file), at
// most maxRevocationWords of them, and reports whether it holds a question mark.
func revocationWords(text string) (ws []string, question bool) {
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			ws = append(ws, cur.String())
			cur.Reset()
		}
	}
	for _, r := range norm.NFKD.String(text) {
		if len(ws) >= maxRevocationWords {
			break
		}
		switch {
		case unicode.Is(unicode.Mn, r):
			// An accent, split off its letter by NFKD: "bórrenme" is "borrenme".
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && cur.Len() > 0:
			// "don't" is "dont".
		default:
			question = question || r == '?' || r == '¿' || r == '？'
			flush()
		}
	}
	flush()
	if len(ws) > maxRevocationWords {
		ws = ws[:maxRevocationWords]
	}
	return ws, question
}
