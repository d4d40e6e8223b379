// Package linkpreview tells a link-preview fetcher from a person following a short link, by
// the request's User-Agent. Messaging apps fetch a link as soon as it is shown in a chat to
// draw its preview card; such a fetch is recorded but is not a click.
package linkpreview

import "strings"

// fetchers are lower-case fragments of the user agents of preview fetchers and crawlers. Apple's
// Messages (iMessage) previews links as "facebookexternalhit/1.1 Facebot Twitterbot/1.0";
// WhatsApp as "WhatsApp/2..."; the rest name themselves.
var fetchers = []string{
	"facebookexternalhit", "facebot", "facebookcatalog", "meta-externalagent", // Facebook, Messenger, Instagram, iMessage
	"twitterbot",                 // Twitter/X
	"whatsapp",                   // WhatsApp
	"slackbot", "slack-imgproxy", // Slack
	"telegrambot", // Telegram
	"discordbot",  // Discord
	"linkedinbot", // LinkedIn
	"googlebot", "google-pagerenderer", "googleother", "google-inspectiontool", "adsbot-google",
	"feedfetcher-google", "apis-google", "google (+https://developers.google.com", // Google
	"applebot",                                                                // Apple
	"skypeuripreview", "microsoftpreview", "msnbot", "bingbot", "bingpreview", // Microsoft: Skype, Teams, Outlook, Bing
	"pinterestbot", "redditbot", "tumblr", "vkshare", "kakaotalk-scrap", "mastodon", "embedly", "iframely",
	"yandexbot", "duckduckbot", "baiduspider",
	// Generic marks; in-app browsers (Instagram, LINE, Snapchat) are people and carry none.
	"bot/", "bot;", "crawler", "spider", "preview",
}

// IsFetcher reports whether userAgent is a preview fetcher or crawler rather than a person's
// browser. An empty user agent is a program too: browsers always send one.
func IsFetcher(userAgent string) bool {
	ua := strings.ToLower(strings.TrimSpace(userAgent))
	if ua == "" {
		return true
	}
	for _, f := range fetchers {
		if strings.Contains(ua, f) {
			return true
		}
	}
	return false
}
