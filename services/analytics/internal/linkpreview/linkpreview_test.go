package linkpreview_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/services/analytics/internal/linkpreview"
)

// Real user agents: the preview fetchers of the apps people share links in are not clicks;
// phones' and desktops' browsers (and in-app browsers) are.
func TestPreviewFetchersAreToldFromPeople(t *testing.T) {
	fetchers := map[string]string{
		"iMessage":  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
		"WhatsApp":  "WhatsApp/2.23.20.0 A",
		"Facebook":  "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Slack":     "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"Twitter":   "Twitterbot/1.0",
		"Telegram":  "TelegramBot (like TwitterBot)",
		"Discord":   "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"LinkedIn":  "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Google":    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Skype":     "Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5",
		"Teams":     "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0 Safari/537.36 MicrosoftPreview/2.0",
		"no header": "",
	}
	for name, ua := range fetchers {
		assert.True(t, linkpreview.IsFetcher(ua), name)
	}
	people := map[string]string{
		"iPhone Safari":  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
		"Android Chrome": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Mobile Safari/537.36",
		"Firefox":        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0",
		"Instagram app":  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 307.0.0.34.111",
		"curl":           "curl/8.4.0",
	}
	for name, ua := range people {
		assert.False(t, linkpreview.IsFetcher(ua), name)
	}
}
