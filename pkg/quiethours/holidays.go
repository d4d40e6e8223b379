package quiethours

import (
	"sync"
	"time"
)

// Holiday is one day a state's holiday statute names, by a rule that gives its date in any
// year: a fixed date (Month, Day), the Nth Weekday of Month (Nth -1: the last), or a number
// of days from Western Easter (Good Friday, Mardi Gras); Offset days are added after.
type Holiday struct {
	Name      string
	Month     time.Month
	Day       int // fixed date; 0 when the day is a weekday of the month or from Easter
	Weekday   time.Weekday
	Nth       int
	Easter    bool
	Offset    int
	EvenYears bool // only in even years (an election day)
}

// fixed, nth, last and easter build Holidays.
func fixed(name string, m time.Month, d int) Holiday { return Holiday{Name: name, Month: m, Day: d} }
func nth(name string, n int, wd time.Weekday, m time.Month) Holiday {
	return Holiday{Name: name, Month: m, Weekday: wd, Nth: n}
}
func last(name string, wd time.Weekday, m time.Month) Holiday { return nth(name, -1, wd, m) }
func easter(name string, offset int) Holiday {
	return Holiday{Name: name, Easter: true, Offset: offset}
}

// Date is h's date in year (midnight UTC, a civil date); ok is false when h is not held
// that year.
func (h Holiday) Date(year int) (d time.Time, ok bool) {
	if h.EvenYears && year%2 != 0 {
		return time.Time{}, false
	}
	switch {
	case h.Easter:
		d = easterSunday(year)
	case h.Day != 0:
		d = time.Date(year, h.Month, h.Day, 0, 0, 0, 0, time.UTC)
	case h.Nth > 0:
		first := time.Date(year, h.Month, 1, 0, 0, 0, 0, time.UTC)
		d = first.AddDate(0, 0, (7+int(h.Weekday)-int(first.Weekday()))%7+7*(h.Nth-1))
	default: // the last Weekday of Month
		end := time.Date(year, h.Month+1, 0, 0, 0, 0, 0, time.UTC)
		d = end.AddDate(0, 0, -((7 + int(end.Weekday()) - int(h.Weekday)) % 7))
	}
	return d.AddDate(0, 0, h.Offset), true
}

// easterSunday is Western (Gregorian) Easter Sunday of year, by the anonymous Gregorian
// algorithm (Meeus/Jones/Butcher).
func easterSunday(year int) time.Time {
	a, b, c := year%19, year/100, year%100
	d, e := b/4, b%4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i, k := c/4, c%4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	n := h + l - 7*m + 114
	return time.Date(year, time.Month(n/31), n%31+1, 0, 0, 0, 0, time.UTC)
}

// Observance is which other day a holiday statute moves a weekend holiday to. The day
// moved to is closed as well as the date itself: a law that moves a holiday still leaves
// doubt about the date, and a text held a day is the cheap side of that doubt.
type Observance int

const (
	AsDated        Observance = iota // the date only: the statute moves nothing
	SundayToMonday                   // a holiday on Sunday is also kept the Monday after
	NearestWeekday                   // Saturday's on the Friday before, Sunday's on the Monday after
)

// Holidays is the holiday rule of one state's solicitation law: the days it names
// (through the state's holiday statute), how that statute moves weekend holidays, and
// whether the law closes only weekdays that are holidays (Rhode Island's hours are
// "Monday through Friday, except a state or federal holiday"; its Saturday hours stand).
type Holidays struct {
	Days         []Holiday
	Observed     Observance
	WeekdaysOnly bool
	Note         string // the rule in words, for the docs
	Source       string // where the rule and the list of days were checked

	years sync.Map // year → map[time.Time]bool, see closedIn
}

// Closed reports whether the civil date y-m-d (in the recipient's zone) is closed by h: one
// of its days, or the day one is observed on.
func (h *Holidays) Closed(y int, m time.Month, d int) bool {
	if h == nil {
		return false
	}
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if h.WeekdaysOnly && (day.Weekday() == time.Saturday || day.Weekday() == time.Sunday) {
		return false
	}
	return h.closedIn(y)[day]
}

// closedIn is the set of days of year closed by h, worked out once per year: dispatch asks
// for every message, and Estimate for every window it steps over. The year before and after
// are looked at too, since a holiday's observed day can fall in another year (1 January on a
// Saturday is observed on 31 December).
func (h *Holidays) closedIn(year int) map[time.Time]bool {
	if set, ok := h.years.Load(year); ok {
		return set.(map[time.Time]bool)
	}
	set := map[time.Time]bool{}
	for y := year - 1; y <= year+1; y++ {
		for _, hd := range h.Days {
			if date, ok := hd.Date(y); ok {
				for _, d := range []time.Time{date, h.observed(date)} {
					if d.Year() == year {
						set[d] = true
					}
				}
			}
		}
	}
	h.years.Store(year, set)
	return set
}

// observed is the day date is also kept on under h's observance (date itself when none).
func (h *Holidays) observed(date time.Time) time.Time {
	switch {
	case h.Observed != AsDated && date.Weekday() == time.Sunday:
		return date.AddDate(0, 0, 1)
	case h.Observed == NearestWeekday && date.Weekday() == time.Saturday:
		return date.AddDate(0, 0, -1)
	}
	return date
}

// The holiday rules of the states whose solicitation laws name holidays (docs/quiet-hours.md).
var (
	// alabamaHolidays: Ala. Admin. Code r. 770-X-5-.17(1)(b) allows no solicitation calls on
	// Sundays or holidays; the holidays are those of Ala. Code § 1-3-8(a)-(b), which moves a
	// Sunday holiday to Monday and a Saturday one to Friday.
	alabamaHolidays = &Holidays{
		Days: []Holiday{
			fixed("New Year's Day", time.January, 1),
			nth("Martin Luther King Jr.'s and Robert E. Lee's Birthday", 3, time.Monday, time.January),
			nth("George Washington's and Thomas Jefferson's Birthday", 3, time.Monday, time.February),
			nth("Confederate Memorial Day", 4, time.Monday, time.April),
			last("National Memorial Day", time.Monday, time.May),
			nth("Jefferson Davis' Birthday", 1, time.Monday, time.June),
			fixed("Independence Day", time.July, 4),
			nth("Labor Day", 1, time.Monday, time.September),
			nth("Columbus Day, Fraternal Day and American Indian Heritage Day", 2, time.Monday, time.October),
			fixed("Veterans' Day", time.November, 11),
			nth("Thanksgiving Day", 4, time.Thursday, time.November),
			fixed("Christmas Day", time.December, 25),
		},
		Observed: NearestWeekday,
		Note:     "no solicitations on state holidays; a holiday on Sunday is also kept the Monday after, one on Saturday the Friday before",
		Source: "Ala. Admin. Code r. 770-X-5-.17(1)(b), https://d1tvxue8o4w0fl.cloudfront.net/regulation/alabama-administrative-code/title-770-alabama-public-service-commission/chapter-770-x-5-telephone-rules/section-770-x-5-17-live-and-automated-solicitations-and-announcements; " +
			"holidays: Ala. Code § 1-3-8, https://law.uslawyerdatabase.com/section-1-3-8-holidays-enumerated-personal-leave-days-state-holidays-observed-by-closing-of-state-offices-compensatory-leave-days",
	}

	// louisianaHolidays: La. R.S. 45:811(3) forbids solicitation by automatic dialing on
	// days declared state holidays and Sundays; the holidays are La. R.S. 1:55(A)(1)'s, which
	// moves none.
	louisianaHolidays = &Holidays{
		Days: []Holiday{
			fixed("New Year's Day", time.January, 1),
			fixed("Battle of New Orleans", time.January, 8),
			nth("Dr. Martin Luther King, Jr.'s Birthday", 3, time.Monday, time.January),
			nth("Washington's Birthday and Presidents' Day", 3, time.Monday, time.February),
			easter("Mardi Gras", -47),
			easter("Good Friday", -2),
			last("National Memorial Day", time.Monday, time.May),
			fixed("Independence Day", time.July, 4),
			fixed("Huey P. Long Day", time.August, 30),
			nth("Labor Day", 1, time.Monday, time.September),
			nth("Christopher Columbus Day", 2, time.Monday, time.October),
			fixed("All Saints' Day", time.November, 1),
			fixed("Veterans' Day", time.November, 11),
			nth("Thanksgiving Day", 4, time.Thursday, time.November),
			fixed("Christmas Day", time.December, 25),
		},
		Observed: AsDated,
		Note:     "no solicitations on state holidays, on their dates",
		Source:   "La. R.S. 45:811(2)-(3), https://lawserver.com/?p=30183792; holidays: La. R.S. 1:55(A)(1), https://legis.la.gov/legis/Law.aspx?d=74097",
	}

	// rhodeIslandHolidays: R.I. Gen. Laws § 5-61-2 ("hours of operation": Monday through
	// Friday, except a state or federal holiday); state holidays of § 25-1-1, which keeps a
	// Sunday holiday the Monday after, and the federal ones of 5 U.S.C. § 6103(a).
	rhodeIslandHolidays = &Holidays{
		Days: []Holiday{
			fixed("New Year's Day", time.January, 1),
			nth("Dr. Martin Luther King, Jr.'s Birthday", 3, time.Monday, time.January),
			nth("Washington's Birthday", 3, time.Monday, time.February),
			fixed("Rhode Island Independence Day", time.May, 4),
			last("Memorial Day", time.Monday, time.May),
			fixed("Juneteenth National Independence Day (federal)", time.June, 19),
			fixed("Independence Day", time.July, 4),
			nth("Victory Day", 2, time.Monday, time.August),
			nth("Labor Day", 1, time.Monday, time.September),
			nth("Columbus Day", 2, time.Monday, time.October),
			{Name: "Election Day (even years)", Month: time.November, Weekday: time.Monday, Nth: 1, Offset: 1, EvenYears: true},
			fixed("Veterans' Day", time.November, 11),
			nth("Thanksgiving Day (federal)", 4, time.Thursday, time.November),
			fixed("Christmas Day", time.December, 25),
		},
		Observed:     SundayToMonday,
		WeekdaysOnly: true,
		Note:         "no solicitations on a state or federal holiday from Monday to Friday (Saturday hours stand); a holiday on Sunday is kept the Monday after",
		Source: "R.I. Gen. Laws § 5-61-2, https://instalawyer.io/laws/rhode-island-general-laws/section-5-61-2-definitions; " +
			"holidays: R.I. Gen. Laws § 25-1-1, https://unicourt.github.io/cic-code-ri/transforms/ri/ocri/r71/gov.ri.code.title.25.html, and 5 U.S.C. § 6103(a)",
	}
)
