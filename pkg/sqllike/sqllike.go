// Package sqllike turns a user's search text into a LIKE/ILIKE pattern that matches the text
// itself: unescaped, a "%" or "_" typed into a search box is a wildcard and lists everything.
//
// The patterns escape with a backslash; queries name it with ESCAPE '\' so that the meaning
// does not hang on the server's defaults.
package sqllike

import "strings"

var escaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Escape is s with LIKE's special characters (%, _ and the escape character \) escaped.
func Escape(s string) string { return escaper.Replace(s) }

// Contains is the pattern matching values that contain s anywhere.
func Contains(s string) string { return "%" + Escape(s) + "%" }
