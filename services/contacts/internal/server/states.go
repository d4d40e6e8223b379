package server

// usStates are the two-letter USPS codes a contact's state may take: the fifty states, the
// District of Columbia, the inhabited territories, the minor outlying islands and the armed
// forces' postal codes (AA, AE, AP), which are real mailing addresses.
var usStates = map[string]bool{
	"AL": true, "AK": true, "AZ": true, "AR": true, "CA": true, "CO": true, "CT": true, "DE": true,
	"FL": true, "GA": true, "HI": true, "ID": true, "IL": true, "IN": true, "IA": true, "KS": true,
	"KY": true, "LA": true, "ME": true, "MD": true, "MA": true, "MI": true, "MN": true, "MS": true,
	"MO": true, "MT": true, "NE": true, "NV": true, "NH": true, "NJ": true, "NM": true, "NY": true,
	"NC": true, "ND": true, "OH": true, "OK": true, "OR": true, "PA": true, "RI": true, "SC": true,
	"SD": true, "TN": true, "TX": true, "UT": true, "VT": true, "VA": true, "WA": true, "WV": true,
	"WI": true, "WY": true,
	"DC": true,
	"AS": true, "GU": true, "MP": true, "PR": true, "VI": true, "UM": true,
	"AA": true, "AE": true, "AP": true,
}
