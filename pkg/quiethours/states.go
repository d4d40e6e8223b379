package quiethours

import "time"

// Hours is one day's window in local hours, [Start, End); Start == End sends nothing that day.
type Hours struct{ Start, End int }

// StateRule is a US state's law on when telephone solicitations (texts included) may reach
// its residents, where it is narrower than the federal 08:00–21:00.
type StateRule struct {
	State    string    // USPS code
	Days     [7]Hours  // by time.Weekday
	Holidays *Holidays // the days its law closes besides (nil: none)
	Zones    []string  // the state's zones, all kept to when the recipient's own zone is unknown
	Note     string    // the rule in words, for the docs
	Source   string    // where the rule was checked
}

// Sources cited below: compliance vendors' state tables, cited where no statute text was read
// or beside one that was.
const (
	dropCowboy = "https://www.dropcowboy.com/state-compliance (updated 2025-11-01)"
	clickPoint = "https://blog.clickpointsoftware.com/telemarketing-calling-hours-by-state (reviewed 2025-07)"
)

var (
	eastern  = []string{"America/New_York"}
	central  = []string{"America/Chicago"}
	mountain = []string{"America/Denver"}
	pacific  = []string{"America/Los_Angeles"}
	closed   = Hours{}
)

// daily is the same window every day.
func daily(start, end int) [7]Hours {
	return week(Hours{start, end}, Hours{start, end}, Hours{start, end})
}

// week is a window for Monday to Friday, one for Saturday and one for Sunday.
func week(weekday, saturday, sunday Hours) [7]Hours {
	d := [7]Hours{}
	for i := range d {
		d[i] = weekday
	}
	d[time.Saturday], d[time.Sunday] = saturday, sunday
	return d
}

// StateRules is every state rule applied, one row per state with its source: the statute (or
// regulation) first where its text was read, then summaries. docs/quiet-hours.md says, row by
// row, how well each is sourced.
var StateRules = []StateRule{
	{"AL", week(Hours{8, 20}, Hours{8, 20}, closed), alabamaHolidays, central,
		"08:00–20:00 Monday to Saturday; no Sundays or state holidays",
		"Ala. Admin. Code r. 770-X-5-.17 (live and automated solicitations; its holiday rule read, see holidays.go); " + dropCowboy + "; " + clickPoint},
	{"CT", daily(9, 20), nil, eastern,
		"09:00–20:00 every day", "Conn. Gen. Stat. § 42-288a as amended by Public Act 23-98 (in force 2023-10-01), https://cga.ct.gov/current/pub/chap_743m.htm; " +
			"https://dnc.dreamhosters.com/connecticut-passes-new-telemarketing-law (DNC.com: hours shortened to 9:00 am–8:00 pm); " + dropCowboy},
	{"FL", daily(8, 20), nil, []string{"America/New_York", "America/Chicago"},
		"08:00–20:00 every day", "Fla. Stat. § 501.616(6)(a) (SB 1120, 2021); " + dropCowboy + "; " + clickPoint},
	{"KY", daily(10, 21), nil, []string{"America/New_York", "America/Chicago"},
		"10:00–21:00 every day", "KRS 367.46955(16), https://self-law.org/code/ky/chapter-367/367-46955 (the subsection's text not retrieved); " +
			dropCowboy + "; " + clickPoint},
	{"LA", week(Hours{8, 20}, Hours{8, 20}, closed), louisianaHolidays, central,
		"08:00–20:00 Monday to Saturday; no Sundays or state holidays",
		"La. R.S. 45:811(2)-(3) (\"other than between the hours of 8:00 a.m. and 8:00 p.m., Monday through Saturday\"; \"a state holiday, or Sundays\"), https://lawserver.com/?p=30183792; " +
			dropCowboy + "; " + clickPoint},
	{"MA", daily(8, 20), nil, eastern,
		"08:00–20:00 every day", "201 CMR 12.02(2) (no unsolicited sales call \"between the hours of 8:00 P.M. to 8:00 A.M., local time at the consumer's location\"; under M.G.L. c. 159C), " +
			"https://regulations.justia.com/states/massachusetts/201-cmr/title-201-cmr-12-00/section-12-02; " + dropCowboy + "; " + clickPoint},
	{"MD", daily(8, 20), nil, eastern,
		"08:00–20:00 every day", "Md. Code, Com. Law § 14-4502 (Stop the Spam Calls Act of 2023, SB 90, in force 2024-01-01); " +
			"https://www.wmar2news.com/local/law-to-prevent-spam-calls-takes-effect-first-of-the-year (hours 8:00am–8:00pm in the called party's time zone); " + dropCowboy},
	{"MI", daily(9, 21), nil, []string{"America/Detroit", "America/Menominee"},
		"09:00–21:00 every day", dropCowboy + " (no statute text found: see the docs)"},
	{"MN", daily(9, 21), nil, central,
		"09:00–21:00 every day", dropCowboy + " (no statute text found: see the docs)"},
	{"MS", week(Hours{8, 20}, Hours{8, 20}, closed), nil, central,
		"08:00–20:00 Monday to Saturday; no Sundays (holidays no longer: the rule was repealed in 2024)",
		"Miss. Code Ann. § 77-3-723(1); https://www.dnc.com/blog/no-more-holidays-mississippi-marketers-magnolia-state-lifts-prohibition-telemarketing-legal (2024-06-03); " + dropCowboy},
	{"NM", daily(9, 21), nil, mountain,
		"09:00–21:00 every day", "N.M. Stat. § 57-12-22(B)(5) (solicitations \"received before 9:00 a.m. or after 9:00 p.m.\"), " +
			"https://law.justia.com/codes/new-mexico/2006/nmrc/jd_57-12-22-13117.html; " + dropCowboy},
	{"NV", daily(9, 20), nil, pacific,
		"09:00–20:00 every day", dropCowboy + "; NRS 597.814(2)(a) (no automatic dialing and announcing call received \"during the period between 9 p.m. and 9 a.m.\"), " +
			"http://www.contactcentercompliance.com/legal/statutes/NV/NRS/597.814.adpx: the 20:00 end rests on the summary (see the docs)"},
	{"OK", daily(8, 20), nil, central,
		"08:00–20:00 every day", "Okla. Stat. tit. 15 § 775C.4 (Telephone Solicitation Act of 2022); " + dropCowboy},
	{"RI", week(Hours{9, 18}, Hours{10, 17}, closed), rhodeIslandHolidays, eastern,
		"09:00–18:00 Monday to Friday, 10:00–17:00 Saturday; no Sundays, no state or federal holidays from Monday to Friday",
		"R.I. Gen. Laws § 5-61-2 (\"hours of operation\") and § 5-61-3.6, https://instalawyer.io/laws/rhode-island-general-laws/section-5-61-2-definitions, http://webserver.rilin.state.ri.us/Statutes/TITLE5/5-61/5-61-3.6.HTM"},
	{"TX", week(Hours{9, 21}, Hours{9, 21}, Hours{12, 21}), nil, []string{"America/Chicago", "America/Denver"},
		"09:00–21:00 Monday to Saturday, 12:00–21:00 Sunday",
		"Tex. Bus. & Com. Code § 301.051(b)(2) (\"after 12 noon and before 9 p.m. on a Sunday or after 9 a.m. and before 9 p.m. on a weekday or a Saturday\"), " +
			"as quoted in H.B. 4403 (88th Leg., 2023), https://app.legiplex.com/tx/legislature/2023/88-0/bills/hb4403/drafts-compare; texts too since S.B. 140 (in force 2025-09-01): " +
			"https://www.foster.com/newsroom-alerts-texas-expands-telemarketing-law-to-cover-text-messagesms-marketing-what-companies-need-to-know, " +
			"https://support.telnyx.com/en/articles/12141904-legal-update-texas-s-mini-tcpa-now-applies-to-texts"},
	{"WA", daily(8, 20), nil, pacific,
		"08:00–20:00 every day", "Rev. Code Wash. § 19.158.040(2), https://app.leg.wa.gov/RCW/default.aspx?cite=19.158.040"},
}

// rules indexes StateRules by state.
var rules = func() map[string]*StateRule {
	m := make(map[string]*StateRule, len(StateRules))
	for i := range StateRules {
		m[StateRules[i].State] = &StateRules[i]
	}
	return m
}()

// RuleFor is state's rule; nil when its law is no narrower than the federal window.
func RuleFor(state string) *StateRule { return rules[state] }
