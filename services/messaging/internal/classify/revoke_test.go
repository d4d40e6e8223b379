package classify

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Revocations in words, in English and Spanish: high ones are acted on as STOP, low ones go to
// a person, and the rest, many of them using the same verbs, change nothing.
func TestDetectRevocation(t *testing.T) {
	const (
		none = RevocationNone
		low  = RevocationLow
		high = RevocationHigh
	)
	tests := []struct {
		text string
		want Revocation
		rule string // checked when set
	}{
		// High: the whole message, or nearly, revokes consent.
		{"please stop texting me", high, "stop-messaging"},
		{"Stop texting me!!", high, "stop-messaging"},
		{"STOP MESSAGING ME", high, "stop-messaging"},
		{"Quit texting this number", high, "stop-messaging"},
		{"stop contacting me please", high, "stop-messaging"},
		{"Please stop texting me, I'm not interested", high, "stop-messaging"},
		{"can you stop texting me?", high, "stop-messaging"},
		{"Could you please stop sending me texts", high, "stop-sending"},
		{"stop sending me these messages", high, "stop-sending"},
		{"stop the texts", high, "stop-messages"},
		{"Stop all these messages now", high, "stop-messages"},
		{"please stop", high, "bare-stop"},
		{"Stop please!", high, "bare-stop"},
		{"stop stop stop", high, "bare-stop"},
		{"stop it", high, "bare-stop"},
		{"unsubscribe me please", high, ""},
		{"opt out please", high, "bare-stop"},
		{"don't text me anymore", high, "dont-message"},
		{"Do not text me", high, "dont-message"},
		{"Do NOT contact this number again", high, "dont-message"},
		{"never message me again", high, "dont-message"},
		{"Don't send me any more texts", high, "dont-send"},
		{"remove me from this list", high, "remove-me"},
		{"Please remove me from your list. Thanks", high, "remove-me"},
		{"delete my number", high, "remove-me"},
		{"take me off your list", high, "take-me-off"},
		{"get me off this list now", high, "take-me-off"},
		{"opt me out", high, "opt-me-out"},
		{"I want to opt out", high, "want-opt-out"},
		{"I'd like to unsubscribe", high, "want-opt-out"},
		{"no more texts please", high, "no-more-messages"},
		{"I don't want these texts", high, "dont-want-messages"},
		{"I no longer want to receive messages", high, "dont-want-messages"},
		{"ya no me manden mensajes", high, "es-no-me-envien"},
		{"No me escriban más", high, "es-no-me-envien"},
		{"no me envíen nada por favor", high, "es-no-me-envien"},
		{"quiero darme de baja", high, "es-baja"},
		{"Me quiero dar de baja", high, "es-baja"},
		{"denme de baja", high, "es-baja"},
		{"bórrenme de la lista", high, "es-borrenme"},
		{"Sáquenme de su lista por favor", high, "es-borrenme"},
		{"eliminen mi número", high, "es-borren-mi-numero"},
		{"dejen de enviarme mensajes", high, "es-dejen-de"},
		{"Para de escribirme", high, "es-dejen-de"},
		{"paren de mandar mensajes", high, "es-dejen-de-enviar"},
		{"no quiero recibir más mensajes", high, "es-no-quiero"},
		{"No más mensajes", high, "es-no-mas"},
		{"¿Pueden dejar de escribirme?", high, "es-dejen-de"},

		// Low: a person decides.
		{"stop texting me after 9pm", low, "stop-messaging"},
		{"Stop sending me texts about the sale", low, "stop-sending"},
		{"how do I stop these texts?", low, ""},
		{"why won't you stop texting me", low, ""},
		{"Hi, I got your message yesterday and honestly I think you should stop texting me because it is too much", low, "stop-messaging"},
		{"Please stop texting me but keep the appointment reminders", low, "stop-messaging"},
		{"leave me alone", low, "leave-me-alone"},
		{"I never signed up for this", low, "never-signed-up"},
		{"quiero cancelar mi suscripción", low, "es-cancelar"},
		{"no me manden mensajes después de las 9", low, "es-no-me-envien"},
		{"stop texting her", low, "stop-messaging"},
		{"¿cómo me doy de baja?", low, "es-baja"},
		{"I'll stop texting you now", low, "stop-messaging"},

		// None: the same words saying something else.
		{"don't stop", none, ""},
		{"Don't stop texting me, I love these deals", none, ""},
		{"stop by the store at 5", none, ""},
		{"can you remove the extra charge", none, ""},
		{"no pares", none, ""},
		{"para el viernes", none, ""},
		{"baja el precio", none, ""},
		{"no dejen de enviarme mensajes", none, ""},
		{"no me manden el archivo", none, ""},
		{"Please cancel my appointment", none, ""},
		{"I don't text much", none, ""},
		{"drop me a line when you can", none, ""},
		{"Can you text me the address?", none, ""},
		{"Stop at the front desk when you arrive", none, ""},
		{"I stopped by yesterday", none, ""},
		{"Remove the second item from my order", none, ""},
		{"Thanks for the reminder", none, ""},
		{"yes", none, ""},
		{"", none, ""},
		{"Text me the details please", none, ""},
		{"Please send me more messages like this", none, ""},
		{"¿Me pueden mandar el horario?", none, ""},
		{"Envíenme la dirección por favor", none, ""},
		{"no, gracias", none, ""},
	}
	for _, tt := range tests {
		got, rule := DetectRevocation(tt.text)
		assert.Equal(t, tt.want, got, "%q (rule %q)", tt.text, rule)
		if tt.rule != "" {
			assert.Equal(t, tt.rule, rule, "%q", tt.text)
		}
		assert.Equal(t, got == RevocationNone, rule == "", "%q: confidence %v with rule %q", tt.text, got, rule)
	}
}
