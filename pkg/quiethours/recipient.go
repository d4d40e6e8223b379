package quiethours

import (
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// usStates maps each state's (and DC's) name, upper case, to its USPS code.
var usStates = map[string]string{
	"ALABAMA": "AL", "ALASKA": "AK", "ARIZONA": "AZ", "ARKANSAS": "AR", "CALIFORNIA": "CA",
	"COLORADO": "CO", "CONNECTICUT": "CT", "DELAWARE": "DE", "DISTRICT OF COLUMBIA": "DC",
	"FLORIDA": "FL", "GEORGIA": "GA", "HAWAII": "HI", "IDAHO": "ID", "ILLINOIS": "IL",
	"INDIANA": "IN", "IOWA": "IA", "KANSAS": "KS", "KENTUCKY": "KY", "LOUISIANA": "LA",
	"MAINE": "ME", "MARYLAND": "MD", "MASSACHUSETTS": "MA", "MICHIGAN": "MI", "MINNESOTA": "MN",
	"MISSISSIPPI": "MS", "MISSOURI": "MO", "MONTANA": "MT", "NEBRASKA": "NE", "NEVADA": "NV",
	"NEW HAMPSHIRE": "NH", "NEW JERSEY": "NJ", "NEW MEXICO": "NM", "NEW YORK": "NY",
	"NORTH CAROLINA": "NC", "NORTH DAKOTA": "ND", "OHIO": "OH", "OKLAHOMA": "OK", "OREGON": "OR",
	"PENNSYLVANIA": "PA", "RHODE ISLAND": "RI", "SOUTH CAROLINA": "SC", "SOUTH DAKOTA": "SD",
	"TENNESSEE": "TN", "TEXAS": "TX", "UTAH": "UT", "VERMONT": "VT", "VIRGINIA": "VA",
	"WASHINGTON": "WA", "WEST VIRGINIA": "WV", "WISCONSIN": "WI", "WYOMING": "WY",
}

// codes is the set of USPS codes in usStates.
var stateCodes = func() map[string]bool {
	m := make(map[string]bool, len(usStates))
	for _, c := range usStates {
		m[c] = true
	}
	return m
}()

// StateCode is a US state's USPS code from its code or name in any case ("fl", "Florida");
// "" for anything else.
func StateCode(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if stateCodes[s] {
		return s
	}
	return usStates[s]
}

// areaStates caches the state of each North American area code looked up ("+1305" → "FL"):
// the geocoding data is read once per area code, not per message.
var areaStates sync.Map

// RecipientState is a recipient's US state: the contact's state when it names one, else the
// state of its E.164 phone's area code, else "".
func RecipientState(contactState, e164 string) string {
	if s := StateCode(contactState); s != "" {
		return s
	}
	if len(e164) != 12 || !strings.HasPrefix(e164, "+1") {
		return ""
	}
	if s, ok := areaStates.Load(e164[:5]); ok {
		return s.(string)
	}
	n, err := phonenumbers.Parse(e164, "US")
	if err != nil {
		return ""
	}
	// The geocoding data names an area code's state ("Florida") or a place in it
	// ("New York, NY"); Canadian provinces name no US state.
	place, err := phonenumbers.GetGeocodingForNumber(n, "en")
	if err != nil || place == "" {
		return ""
	}
	if i := strings.LastIndex(place, ", "); i >= 0 {
		place = place[i+2:]
	}
	s := StateCode(place)
	areaStates.Store(e164[:5], s)
	return s
}
