package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// More rules of the spec no other test checked (issue 25, "Rules no test checks"), besides
// polls'; spec_rules_test.go holds the first ones.

// campaigns reads GET /api/campaigns.
func (tn *tenant) campaigns() []map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/campaigns", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var items []map[string]any
	require.NoError(t, jsonUnmarshal(res.Body, &items))
	return items
}

// tagged is an ad-hoc audience: the contacts with tag.
func tagged(tag string) map[string]any {
	return map[string]any{"tags": []string{tag}}
}

// audienceTenant starts a stack with a tenant of 100 credits sending from number, whose
// contacts phones are tagged tag.
func audienceTenant(t *testing.T, number, tag string, phones []string) *tenant {
	t.Helper()
	tn := newMsgEnv(t, nil).newTenant(number, 100)
	tn.contacts(tag, phones)
	return tn
}

// awaitSentOnce waits until campaign id completed, having sent one message to each of phones,
// and returns it.
func (tn *tenant) awaitSentOnce(id string, phones []string) campaign {
	t := tn.e.t
	t.Helper()
	done := tn.awaitStatus(id, "completed", 60*time.Second)
	assert.EqualValues(t, len(phones), done.num("totalCount"))
	assert.EqualValues(t, len(phones), done.num("sentCount"))
	for _, p := range phones {
		assert.Len(t, tn.thread(p), 1, "one message to %s", p)
	}
	return done
}

// TestCampaignWithoutTimezoneKeepsTheOrganizationsQuietHours: "Quiet hours are 08:00 to 21:00
// in the campaign, poll or organization timezone": a campaign that gives no timezone is held
// to its organization's. Where it is night for the organization, an immediate send is refused
// and a scheduled one that starts sends nothing (its messages wait for the morning), though
// the recipients' own zones are in the day; the campaign's own timezone, when given, wins.
// Where it is day for the organization, the same campaign goes out.
func TestCampaignWithoutTimezoneKeepsTheOrganizationsQuietHours(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	nightZone, dayZone := zoneWhere(3), zoneWhere(12)
	require.Contains(t, []int{3, 4}, localHour(t, nightZone))
	night := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: nightZone}, "+13125550301", 100)
	day := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: dayZone}, "+13125550302", 100)
	nightPhones := []string{"+12025553101", "+12025553102"}
	dayPhones := []string{"+12025553201", "+12025553202"}
	night.contacts("tz", nightPhones) // the recipients' own zone is in the day
	day.contacts("tz", dayPhones)
	body := map[string]any{"name": "No zone", "message": "Hello {{firstName}}", "contactFilter": tagged("tz")}

	res := night.do("POST", "/api/campaigns", body)
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "QUIET_HOURS", res.ErrCode(t))
	assert.Empty(t, night.campaigns(), "a refused campaign is not stored")

	// Scheduled, it is accepted; when it starts, its messages wait for 08:00 in the
	// organization's zone.
	body["scheduledFor"] = time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	s := campaignOf(t, night.do("POST", "/api/campaigns", body), http.StatusCreated)
	assert.Equal(t, "scheduled", s.str("status"))
	assert.Nil(t, s["timezone"], "no timezone given: null, the organization's applies")
	eventually(t, 30*time.Second, "the scheduled campaign started and stored its audience", func() bool {
		c := night.getCampaign(s.str("id"))
		return c.str("status") != "scheduled" && c.num("totalCount") == 2
	})
	time.Sleep(3 * time.Second)
	c := night.getCampaign(s.str("id"))
	assert.Contains(t, []string{"pending", "queued", "sending"}, c.str("status"))
	assert.EqualValues(t, 0, c.num("sentCount"), "nothing sent at night in the organization's zone")
	assert.EqualValues(t, 2, c.num("queuedCount"))
	// Its estimated completion counts from the organization's next 08:00 too.
	eta, err := time.Parse(time.RFC3339Nano, c["displayMetrics"].(map[string]any)["estimatedCompletionAt"].(string))
	require.NoError(t, err, "%v", c["displayMetrics"])
	loc, err := time.LoadLocation(nightZone)
	require.NoError(t, err)
	assert.Equal(t, 8, eta.In(loc).Hour(), "estimatedCompletionAt %s: the morning in %s", eta, nightZone)
	for _, p := range nightPhones {
		assert.Empty(t, night.thread(p), "nothing sent to %s", p)
	}
	campaignOf(t, night.do("POST", "/api/campaigns/"+s.str("id")+"/cancel", nil), http.StatusOK)

	// The campaign's own timezone wins over the organization's.
	delete(body, "scheduledFor")
	body["timezone"] = dayZone
	own := campaignOf(t, night.do("POST", "/api/campaigns", body), http.StatusCreated)
	assert.Equal(t, "pending", own.str("status"))
	night.awaitSentOnce(own.str("id"), nightPhones)

	// Where it is day for the organization, the campaign without a timezone goes out at once.
	delete(body, "timezone")
	d := campaignOf(t, day.do("POST", "/api/campaigns", body), http.StatusCreated)
	assert.Equal(t, "pending", d.str("status"))
	assert.Nil(t, d["timezone"])
	day.awaitSentOnce(d.str("id"), dayPhones)
}

// TestCampaignDraftIDPromotesAnImmediateSend: POST /api/campaigns with draftId and no
// scheduledFor submits the draft itself ("the draft record is updated in place, no new
// record"): same id, pending, the draft's fields with the sent ones changed, sent to its
// audience. The promoted campaign is no draft any more: a second promotion is refused.
func TestCampaignDraftIDPromotesAnImmediateSend(t *testing.T) {
	t.Parallel()
	phones := []string{"+12025553301", "+12025553302"}
	tn := audienceTenant(t, "+13125550303", "draft", phones)
	d := campaignOf(t, tn.do("POST", "/api/campaigns/draft", map[string]any{
		"name": "Drafted", "message": "Draft text", "contactFilter": tagged("draft"), "timezone": zoneWhere(12),
	}), http.StatusCreated)
	id := d.str("id")

	// A refused promotion changes nothing: the draft stays as it was.
	for _, c := range []struct {
		body map[string]any
		code string
	}{
		{map[string]any{"draftId": id, "message": "Final", "timezone": zoneWhere(3)}, "QUIET_HOURS"},
		{map[string]any{"draftId": id, "message": "", "name": "Renamed"}, "VALIDATION_FAILED"},
	} {
		res := tn.do("POST", "/api/campaigns", c.body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
		assert.Equal(t, c.code, res.ErrCode(t))
		still := tn.getCampaign(id)
		assert.Equal(t, []any{"draft", "Drafted", "Draft text", zoneWhere(12)}, []any{still["status"], still["name"], still["message"], still["timezone"]}, c.code)
	}

	p := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{"draftId": id, "message": "Final {{firstName}}"}), http.StatusCreated)
	assert.Equal(t, id, p.str("id"), "the draft promoted in place")
	assert.Equal(t, "pending", p.str("status"))
	assert.Equal(t, "Drafted", p.str("name"), "the draft's fields stay")
	assert.Equal(t, "Final {{firstName}}", p.str("message"), "the sent fields change")
	assert.Nil(t, p["scheduledFor"])
	list := tn.campaigns()
	require.Len(t, list, 1, "no second campaign")
	assert.Equal(t, id, list[0]["id"])

	tn.awaitSentOnce(id, phones)
	for i, ph := range phones {
		assert.Equal(t, []string{fmt.Sprintf("Final Ada%d", i)}, tn.campaignTexts(ph, "Final"))
	}

	res := tn.do("POST", "/api/campaigns", map[string]any{"draftId": id})
	require.Equal(t, http.StatusConflict, res.Status, "%s", res.Body)
	assert.Equal(t, "INVALID_STATE", res.ErrCode(t))
	assert.Len(t, tn.campaigns(), 1)
	for _, ph := range phones {
		assert.Len(t, tn.thread(ph), 1, "nothing sent twice to %s", ph)
	}
}

// TestCampaignScheduledInThePastSendsNow: "scheduledFor omitted or in the past = send
// immediately": the campaign is pending at once, not scheduled, and goes out; being an
// immediate send it keeps the quiet-hours check (refused where it is night).
func TestCampaignScheduledInThePastSendsNow(t *testing.T) {
	t.Parallel()
	phones := []string{"+12025553401", "+12025553402"}
	tn := audienceTenant(t, "+13125550304", "past", phones)
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	body := map[string]any{"name": "Late", "message": "Now {{firstName}}", "contactFilter": tagged("past"),
		"scheduledFor": past, "timezone": zoneWhere(3)}

	res := tn.do("POST", "/api/campaigns", body)
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "QUIET_HOURS", res.ErrCode(t), "a past scheduledFor is an immediate send")

	body["timezone"] = zoneWhere(12)
	c := campaignOf(t, tn.do("POST", "/api/campaigns", body), http.StatusCreated)
	assert.Equal(t, "pending", c.str("status"), "submitted at once, not scheduled")
	assert.Equal(t, past, c.str("scheduledFor"), "scheduledFor kept as given")
	tn.awaitSentOnce(c.str("id"), phones)
}

// TestSandboxOrganizationSendsForFree: "Test sends and sandbox mode consume no credits": a
// sandbox organization's replies (SMS, and MMS that would cost 2) and campaigns are sent and
// delivered without a credit moving, and it needs no credits to send at all. (A non-sandbox
// organization on the sandbox carrier pays: TestCampaignSendsToItsAudienceAndCompletes.)
func TestSandboxOrganizationSendsForFree(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	rich := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: zoneWhere(12), Sandbox: true}, "+13125550305", 5)
	broke := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: zoneWhere(12), Sandbox: true}, "+13125550306", 0)
	require.EqualValues(t, 5, rich.balance())

	for _, tn := range []*tenant{rich, broke} {
		before := tn.balance()
		phones := []string{"+12025553501", "+12025553502"}
		tn.contacts("free", phones)
		for _, reply := range []map[string]any{
			{"message": "Thanks!"},
			{"message": strings.Repeat("a", 961)},                          // MMS by the route rule: 2 credits elsewhere
			{"message": "Look", "mediaUrl": "https://example.com/pic.png"}, // MMS
		} {
			res := tn.do("POST", "/api/conversations/%2B12025553501/reply", reply)
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			out := res.JSON(t)
			assert.Equal(t, true, out["success"])
			assert.Equal(t, "sandbox", out["provider"])
		}
		c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
			"name": "Free", "message": "Hi {{firstName}}", "contactFilter": tagged("free"), "timezone": zoneWhere(12),
		}), http.StatusCreated)
		done := tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
		assert.EqualValues(t, 2, done.num("sentCount"))
		eventually(t, 15*time.Second, "every message delivered", func() bool {
			for _, m := range tn.thread("+12025553501") {
				if m["status"] != "delivered" {
					return false
				}
			}
			return len(tn.thread("+12025553501")) == 4
		})
		assert.Equal(t, before, tn.balance(), "nothing charged or held")
	}
}

// TestAnalyticsDefaultWindows: without startDate and endDate, every analytics endpoint covers
// the 30 days back to today (best-send-times 90), as the organization's local dates, today
// included: a message or campaign of the window's first date counts, one of the day before
// does not. With endDate alone the window is the 30 days before it.
func TestAnalyticsDefaultWindows(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("", 0)
	p := newProducers(e.env)
	loc, err := time.LoadLocation("America/Chicago") // the tenant's zone
	require.NoError(t, err)
	now := time.Now().In(loc)
	// noon is midday local on the date daysBack before today; date is that date.
	noon := func(daysBack int) string {
		return time.Date(now.Year(), now.Month(), now.Day()-daysBack, 12, 0, 0, 0, loc).UTC().Format(time.RFC3339)
	}
	date := func(daysBack int) string {
		return time.Date(now.Year(), now.Month(), now.Day()-daysBack, 0, 0, 0, 0, loc).Format(time.DateOnly)
	}
	for _, back := range []int{30, 31, 90, 91} {
		p.message(tn.org, msg{kind: "reply", source: uuid.NewString(), created: noon(back), statuses: [][2]string{{"sent", noon(back)}, {"delivered", noon(back)}}})
	}
	in, out := uuid.NewString(), uuid.NewString()
	p.campaign(tn.org, in, "In the window", "completed", noon(30), 1, 1)
	p.campaign(tn.org, out, "Day before", "completed", noon(31), 1, 1)
	all := "startDate=" + date(91) + "&endDate=" + date(0)
	eventually(t, 20*time.Second, "the history applied", func() bool {
		ov := tn.analytics("overview?" + all).JSON(t)
		return ov["messages"].(map[string]any)["delivered"] == 4.0 && ov["campaigns"].(map[string]any)["completed"] == 2.0
	})

	ov := tn.analytics("overview").JSON(t)
	assert.Equal(t, map[string]any{"start": date(30), "end": date(0)}, ov["dateRange"])
	assert.Equal(t, map[string]any{"total": 1.0, "sent": 1.0, "delivered": 1.0, "failed": 0.0, "received": 0.0}, ov["messages"])
	assert.Equal(t, 100.0, ov["deliveryRate"])
	assert.Equal(t, 1.0, ov["campaigns"].(map[string]any)["total"])

	for _, metric := range []string{"", "?metric=campaigns"} {
		days := list(t, tn.analytics("trends"+metric))
		require.Len(t, days, 31, "trends%s: today and the 30 dates before", metric)
		assert.Equal(t, date(30), days[0]["date"])
		assert.Equal(t, date(0), days[30]["date"])
		assert.Equal(t, 1.0, days[0]["total"], "trends%s: the first date counts", metric)
		total := 0.0
		for _, d := range days {
			total += d["total"].(float64)
		}
		assert.Equal(t, 1.0, total, "trends%s: nothing of the day before", metric)
	}

	top := list(t, tn.analytics("top-campaigns"))
	require.Len(t, top, 1)
	assert.Equal(t, in, top[0]["id"])

	res := tn.analytics("export?type=campaigns")
	assert.Contains(t, res.Header.Get("Content-Disposition"), "campaigns-"+date(30)+"-to-"+date(0)+".csv")
	rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 2, "the header and the campaign of the window")
	assert.Equal(t, "In the window", rows[1][0])

	sendTimes := tn.analytics("best-send-times").JSON(t)
	sent := 0.0
	for _, h := range sendTimes["byHour"].([]any) {
		sent += h.(map[string]any)["totalSent"].(float64)
	}
	assert.Equal(t, 3.0, sent, "best-send-times: 90 days back (30, 31 and 90 days ago; not 91)")

	ov = tn.analytics("overview?endDate=" + date(31)).JSON(t)
	assert.Equal(t, map[string]any{"start": date(61), "end": date(31)}, ov["dateRange"])
	assert.Equal(t, 1.0, ov["messages"].(map[string]any)["total"], "the message of 31 days ago")
}

// TestCampaignMergeFields: "Merge fields in message text: {{firstName}}, {{lastName}},
// {{email}}, {{phone}}, {{city}}, {{state}}, {{zip}}, plus any custom field", each filled
// from the recipient's contact.
func TestCampaignMergeFields(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550307", 100)
	res := tn.do("POST", "/api/contacts", map[string]any{
		"phone": "+12025553701", "firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
		"city": "London", "state": "NY", "zip": "10001", "tags": []string{"merge"}, "timezone": zoneWhere(12),
		"customFields": map[string]any{"team": "math", "seats": 2},
	})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
	id := res.JSON(t)["id"].(string)
	eventually(t, 15*time.Second, "phone lookup", func() bool {
		return tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] == true
	})
	c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "Merge", "contactFilter": tagged("merge"), "timezone": zoneWhere(12),
		"message": "{{firstName}} {{lastName}} <{{email}}> {{phone}} {{city}}, {{state}} {{zip}} team={{team}} seats={{seats}}",
	}), http.StatusCreated)
	tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
	th := tn.thread("+12025553701")
	require.Len(t, th, 1)
	assert.Equal(t, "Ada Lovelace <ada@example.com> +12025553701 London, NY 10001 team=math seats=2", th[0]["message"])
}

// TestCampaignAudienceIsTextableOptedInContacts: a campaign's audience is the filter's
// contacts that are opted in and textable (the spec's 400 for "sending to an opted-out
// contact (campaign messages)" is met by leaving them out), and contactFilter's tagsLogic AND
// needs every tag.
func TestCampaignAudienceIsTextableOptedInContacts(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550308", 100)
	both, onlyA := "+12025553801", "+12025553802"
	stopped, landline, pending := "+12025553803", "+12025550002", "+12025550003"
	for _, c := range []struct {
		phone string
		tags  []string
		wait  bool
	}{{both, []string{"a", "b"}, true}, {onlyA, []string{"a"}, true}, {stopped, []string{"a", "b"}, true},
		{landline, []string{"a", "b"}, true}, {pending, []string{"a", "b"}, false}} {
		res := tn.do("POST", "/api/contacts", map[string]any{"phone": c.phone, "firstName": "X", "tags": c.tags, "timezone": zoneWhere(12)})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
		id := res.JSON(t)["id"].(string)
		if c.wait {
			eventually(t, 15*time.Second, "phone lookup of "+c.phone, func() bool {
				return tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] != nil
			})
		}
	}
	e.text(tn.number, stopped, "STOP")

	c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "AND", "message": "Both tags", "timezone": zoneWhere(12),
		"contactFilter": map[string]any{"tags": []string{"a", "b"}, "tagsLogic": "AND"},
	}), http.StatusCreated)
	done := tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
	assert.EqualValues(t, 1, done.num("totalCount"), "only the textable, opted-in contact with both tags")
	assert.EqualValues(t, 1, done.num("sentCount"))
	assert.EqualValues(t, 0, done.num("failedCount"))
	assert.Len(t, tn.campaignTexts(both, "Both tags"), 1)
	for _, p := range []string{onlyA, stopped, landline, pending} {
		assert.Empty(t, tn.campaignTexts(p, "Both tags"), "nothing to %s", p)
	}
}

// TestInboundMessageMakesTheContactTextable: "A contact that has sent an inbound message is
// automatically marked textable": a contact whose lookup never answers (isTextable null, so a
// reply is refused) texts in, and is then textable and can be replied to.
func TestInboundMessageMakesTheContactTextable(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550309", 5)
	id := tn.contact("+12025550003", "Pending", false)
	res := tn.do("POST", "/api/conversations/%2B12025550003/reply", map[string]any{"message": "Hello?"})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Body)
	assert.Equal(t, "CONTACT_LOOKUP_PENDING", res.ErrCode(t))

	e.text(tn.number, "+12025550003", "Hi there")
	eventually(t, 15*time.Second, "the contact marked textable", func() bool {
		return tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] == true
	})
	res = tn.do("POST", "/api/conversations/%2B12025550003/reply", map[string]any{"message": "Hello!"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	assert.Equal(t, true, res.JSON(t)["success"])

	// A number the lookup found to be a landline (isTextable false) that texts in is textable.
	landline := tn.contact("+12025550002", "Land", true)
	require.Equal(t, false, tn.do("GET", "/api/contacts/"+landline, nil).JSON(t)["isTextable"])
	e.text(tn.number, "+12025550002", "I can text after all")
	eventually(t, 15*time.Second, "the landline marked textable", func() bool {
		return tn.do("GET", "/api/contacts/"+landline, nil).JSON(t)["isTextable"] == true
	})
}

// TestCampaignQuietHoursBoundaries: "Quiet hours are 08:00 to 21:00": an immediate send is
// accepted from 08:00 and through 20:59, refused from 21:00 and until 07:59, in the
// campaign's zone.
func TestCampaignQuietHoursBoundaries(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550322", 100)
	if now := time.Now(); now.Minute() == 59 && now.Second() > 50 {
		time.Sleep(15 * time.Second) // not across an hour: each zone's hour must hold for the request
	}
	for hour, want := range map[int]int{7: http.StatusBadRequest, 8: http.StatusCreated, 20: http.StatusCreated, 21: http.StatusBadRequest} {
		zone := zoneWhere(hour)
		require.Equal(t, hour, localHour(t, zone))
		res := tn.do("POST", "/api/campaigns", map[string]any{"name": fmt.Sprint("at ", hour), "message": "Hi",
			"contactFilter": tagged("nobody"), "timezone": zone})
		require.Equal(t, want, res.Status, "%02d:xx: %s", hour, res.Body)
		if want == http.StatusBadRequest {
			assert.Equal(t, "QUIET_HOURS", res.ErrCode(t), "%02d:xx", hour)
		}
	}
	assert.Len(t, tn.campaigns(), 2, "the two accepted")
}

// billingStatus reads GET /api/billing/status.
func (tn *tenant) billingStatus() map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/billing/status", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	return res.JSON(t)
}

// TestPricingModelsSpendWhatTheySay: "unlimited (subscription only, no per-message credits)":
// an unlimited organization without a credit replies and sends campaigns, and no credit
// moves; "full_service (subscription plus included and purchasable credits)": its messages
// are paid from the period's included credits first, then from purchased ones, and included
// credits alone pay for a message.
func TestPricingModelsSpendWhatTheySay(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	ctx := context.Background()
	unlimited := e.newTenant("+13125550310", 0)
	_, err := e.billing.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: unlimited.org, PricingModel: "unlimited", Brand: "Acme"})
	require.NoError(t, err)
	phones := []string{"+12025553901", "+12025553902"}
	unlimited.contacts("plan", phones)
	res := unlimited.do("POST", "/api/conversations/%2B12025553901/reply", map[string]any{"message": strings.Repeat("a", 961)})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	c := campaignOf(t, unlimited.do("POST", "/api/campaigns", map[string]any{
		"name": "Unlimited", "message": "Hi {{firstName}}", "contactFilter": tagged("plan"), "timezone": zoneWhere(12),
	}), http.StatusCreated)
	assert.EqualValues(t, 2, unlimited.awaitStatus(c.str("id"), "completed", 60*time.Second).num("sentCount"))
	eventually(t, 15*time.Second, "the reply delivered", func() bool {
		th := unlimited.thread("+12025553901")
		return len(th) == 2 && th[1]["status"] == "delivered"
	})
	st := unlimited.billingStatus()
	assert.Equal(t, "unlimited", st["pricing_model"])
	assert.Equal(t, map[string]any{"available": 0.0, "included": 0.0, "total": 0.0}, st["credits"], "nothing spent, nothing owed")

	full := e.newTenant("+13125550311", 0)
	_, err = e.billing.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: full.org, PricingModel: "full_service", Brand: "Acme"})
	require.NoError(t, err)
	_, err = e.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: full.org, Amount: 2, Included: true, IdempotencyKey: "period"})
	require.NoError(t, err)
	full.contact("+12025553903", "Ada", true)
	reply := func() {
		t.Helper()
		res := full.do("POST", "/api/conversations/%2B12025553903/reply", map[string]any{"message": "Hello"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	}
	credits := func(available, included float64) {
		t.Helper()
		want := map[string]any{"available": available, "included": included, "total": available + included}
		eventually(t, 15*time.Second, fmt.Sprint("credits ", want), func() bool {
			return assert.ObjectsAreEqual(want, full.billingStatus()["credits"])
		})
	}
	reply() // included credits alone pay
	credits(0, 1)
	_, err = e.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: full.org, Amount: 5, IdempotencyKey: "order"})
	require.NoError(t, err)
	reply() // included first
	credits(5, 0)
	reply() // then purchased
	credits(4, 0)
	assert.EqualValues(t, 4, full.balance(), "the balance is the purchased credits")
}

// TestBillingStatusesThatMaySpend: of the billing statuses, suspended and archived accounts
// cannot spend (a reply is 402 BILLING_SUSPENDED, a campaign fails at queue time with
// failureReason BILLING_SUSPENDED, nothing sent or charged); past_due and overage_warning
// still send and pay.
func TestBillingStatusesThatMaySpend(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	tn := e.newTenant("+13125550312", 10)
	phones := []string{"+12025554101", "+12025554102"}
	tn.contacts("status", phones)
	reply := func(text string) response {
		return tn.do("POST", "/api/conversations/%2B12025554101/reply", map[string]any{"message": text})
	}
	for _, st := range []string{"suspended", "archived"} {
		e.setBillingStatus(tn.org, st)
		res := reply("refused while " + st)
		require.Equal(t, http.StatusPaymentRequired, res.Status, "%s: %s", st, res.Body)
		assert.Equal(t, "BILLING_SUSPENDED", res.ErrCode(t), st)
		c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
			"name": st, "message": "Campaign while " + st, "contactFilter": tagged("status"), "timezone": zoneWhere(12),
		}), http.StatusCreated)
		failed := tn.awaitStatus(c.str("id"), "failed", 30*time.Second)
		assert.Equal(t, "BILLING_SUSPENDED", failed.str("failureReason"), st)
	}
	for _, p := range phones {
		assert.Empty(t, tn.thread(p), "nothing sent to %s", p)
	}
	assert.EqualValues(t, 10, tn.balance(), "nothing charged or held")

	spent := 0.0
	for _, st := range []string{"past_due", "overage_warning", "active"} {
		e.setBillingStatus(tn.org, st)
		res := reply("sent while " + st)
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", st, res.Body)
		assert.Equal(t, true, res.JSON(t)["success"], st)
		spent++
	}
	e.setBillingStatus(tn.org, "overage_warning")
	c := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
		"name": "overage", "message": "Campaign in overage warning", "contactFilter": tagged("status"), "timezone": zoneWhere(12),
	}), http.StatusCreated)
	tn.awaitStatus(c.str("id"), "completed", 60*time.Second)
	spent += float64(len(phones))
	eventually(t, 15*time.Second, "the sends paid", func() bool { return tn.balance() == 10-spent })
}

// TestCampaignHoldCoversEachRecipientsPrice: "A campaign fails at queue time if the balance
// cannot cover the estimated send", the estimate being each recipient's own message priced
// by the credit rules: here one recipient's merged text runs past 480 characters (2 credits),
// the other's not (1). With 2 credits the campaign fails and sends nothing; with 3 it goes
// out and costs 3.
func TestCampaignHoldCoversEachRecipientsPrice(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	for i, c := range []struct {
		credits int32
		status  string
	}{{2, "failed"}, {3, "completed"}} {
		tn := e.newTenant(fmt.Sprintf("+1312555%04d", 313+i), c.credits)
		long, short := fmt.Sprintf("+1202555%04d", 4201+10*i), fmt.Sprintf("+1202555%04d", 4202+10*i)
		for phone, note := range map[string]string{long: strings.Repeat("n", 480), short: "hi"} {
			res := tn.do("POST", "/api/contacts", map[string]any{"phone": phone, "firstName": "Ada", "tags": []string{"price"},
				"timezone": zoneWhere(12), "customFields": map[string]any{"note": note}})
			require.Equal(t, http.StatusCreated, res.Status, "%s", res.Body)
		}
		eventually(t, 15*time.Second, "phone lookups", func() bool {
			res := tn.do("GET", "/api/contacts?tags=price&isTextable=true&includeTotal=true", nil)
			return res.JSON(t)["total"] == 2.0
		})
		created := campaignOf(t, tn.do("POST", "/api/campaigns", map[string]any{
			"name": "Priced", "message": "Note: {{note}}", "contactFilter": tagged("price"), "timezone": zoneWhere(12),
		}), http.StatusCreated)
		done := tn.awaitStatus(created.str("id"), c.status, 60*time.Second)
		if c.status == "failed" {
			assert.Equal(t, "INSUFFICIENT_CREDITS", done.str("failureReason"))
			time.Sleep(500 * time.Millisecond)
			assert.Empty(t, tn.thread(long))
			assert.Empty(t, tn.thread(short))
			assert.EqualValues(t, 2, tn.balance(), "nothing charged or held")
			continue
		}
		assert.EqualValues(t, 2, done.num("sentCount"))
		eventually(t, 15*time.Second, "3 credits spent, the hold settled", func() bool { return tn.balance() == 0 })
	}
}

// TestCreditOnlyPlanHasNoSubscription: the billing status' subscription is "null on a
// credit-only plan" (per_message: "credit balance only"): a full_service account that
// operators move to per_message (`chorusctl plan set --pricing per_message`, which ends the
// plan) reports no subscription any more, its purchased credits kept.
func TestCreditOnlyPlanHasNoSubscription(t *testing.T) {
	t.Parallel()
	e := newMsgEnv(t, nil)
	ctx := context.Background()
	tn := e.newTenant("", 0)
	end := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	_, err := e.billing.SetAccount(ctx, &billingv1.SetAccountRequest{
		OrganizationId: tn.org, PricingModel: "full_service", Brand: "Acme",
		Subscription: &billingv1.Subscription{Id: "sub_1", PlanType: "pro", BillingInterval: "month", Status: "active",
			CurrentPeriodEnd: timestamppb.New(end), Provider: "stripe"},
	})
	require.NoError(t, err)
	_, err = e.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: tn.org, Amount: 7, IdempotencyKey: "order"})
	require.NoError(t, err)
	st := tn.billingStatus()
	require.Equal(t, "full_service", st["pricing_model"])
	require.NotNil(t, st["subscription"])

	_, err = e.billing.SetPlan(ctx, &billingv1.SetPlanRequest{OrganizationId: tn.org, PricingModel: "per_message"})
	require.NoError(t, err)
	st = tn.billingStatus()
	assert.Equal(t, "per_message", st["pricing_model"])
	assert.Nil(t, st["subscription"], "a credit-only plan has no subscription")
	assert.Equal(t, map[string]any{"available": 7.0, "included": 0.0, "total": 7.0}, st["credits"])
}

// TestSandboxOrganizationIsFreeBesideARealCarrier: in a deployment whose carrier is Twilio, a
// sandbox organization's messages still go through the sandbox carrier, reach no real
// carrier and cost nothing, while another organization's go to Twilio and are paid.
func TestSandboxOrganizationIsFreeBesideARealCarrier(t *testing.T) {
	t.Parallel()
	e, carrier := routeStack(t)
	sandbox := e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: zoneWhere(12), Sandbox: true}, "+13125550320", 5)
	paying := e.newTenant("+13125550321", 5)
	for _, c := range []struct {
		tn       *tenant
		phone    string
		provider string
		balance  float64
	}{{sandbox, "+12025554301", "sandbox", 5}, {paying, "+12025554302", "twilio", 4}} {
		c.tn.contact(c.phone, "Ada", true)
		res := c.tn.do("POST", "/api/conversations/"+url.PathEscape(c.phone)+"/reply", map[string]any{"message": "Hello"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		assert.Equal(t, c.provider, res.JSON(t)["provider"])
		eventually(t, 15*time.Second, "the reply's outcome", func() bool {
			th := c.tn.thread(c.phone)
			return len(th) == 1 && th[0]["status"] != "sent"
		})
		assert.Equal(t, c.balance, c.tn.balance(), c.provider)
	}
	assert.Empty(t, carrier.carrierTo("+12025554301"), "the sandbox organization's reply reached no real carrier")
	assert.Len(t, carrier.carrierTo("+12025554302"), 1)
}
