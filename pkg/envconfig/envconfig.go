// Package envconfig reads CHORUS_* environment variables into a process's typed config struct.
// Every bad value is collected and reported with the variable's name, so a misconfigured
// process stops at start with a message that says what to fix.
package envconfig

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables and remembers every failure and every variable it was asked for.
type Reader struct {
	lookup func(string) (string, bool)
	errs   []error
	vars   []Var
	parent *Reader // failures and variables are recorded here too, when set
}

// Var is a variable a Reader was asked for. The manifests test reads a process's
// configuration with a Reader and holds each Deployment to the list: a variable that is
// required, secret, or defaults to something on this machine must be given there.
type Var struct {
	Name string
	// Default is what the process uses when the variable is unset, as text ("" when none).
	Default  string
	Required bool
	// Secret variables carry credentials: their values are never printed, and in Kubernetes
	// they come from a Secret.
	Secret bool
}

// New reads from the process environment.
func New() *Reader { return &Reader{lookup: os.LookupEnv} }

// FromMap reads from m (tests and the all-in-one binary).
func FromMap(m map[string]string) *Reader {
	return &Reader{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok && v != "" }}
}

// WithDefaults returns a Reader that answers from defaults where r has no value, and records
// its failures with r's. The all-in-one binary uses it to point the gateway at the local
// identity provider unless the environment names another.
func (r *Reader) WithDefaults(defaults map[string]string) *Reader {
	return &Reader{parent: r, lookup: func(k string) (string, bool) {
		if v, ok := r.get(k); ok {
			return v, true
		}
		v, ok := defaults[k]
		return v, ok && v != ""
	}}
}

// Vars lists every variable read so far, in the order first read.
func (r *Reader) Vars() []Var { return slices.Clone(r.vars) }

func (r *Reader) note(v Var) {
	for ; r != nil; r = r.parent {
		if !slices.ContainsFunc(r.vars, func(seen Var) bool { return seen.Name == v.Name }) {
			r.vars = append(r.vars, v)
		}
	}
}

func (r *Reader) get(name string) (string, bool) {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

func (r *Reader) fail(name, v, want string) {
	r.record(fmt.Errorf("%s=%q: %s", name, redact(v), want))
}

// read looks name up, noting that it was asked for with its default.
func (r *Reader) read(name string, def any) (string, bool) {
	r.note(Var{Name: name, Default: fmt.Sprint(def)})
	return r.get(name)
}

// redact hides the password of a URL-shaped value (a DSN, a Redis URL), since configuration
// errors are printed.
func redact(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return v
}

func (r *Reader) record(err error) {
	for ; r != nil; r = r.parent {
		r.errs = append(r.errs, err)
	}
}

// String returns the variable or def.
func (r *Reader) String(name, def string) string {
	if v, ok := r.read(name, def); ok {
		return v
	}
	return def
}

// Required returns the variable, recording an error when it is unset.
func (r *Reader) Required(name string) string {
	r.note(Var{Name: name, Required: true})
	v, ok := r.get(name)
	if !ok {
		r.record(fmt.Errorf("%s is required", name))
	}
	return v
}

// Secret returns a credential (a DSN with a password, a signing key, a carrier token), or dev,
// its development default; with dev "" it is required. Its value is never printed.
func (r *Reader) Secret(name, dev string) string {
	r.note(Var{Name: name, Default: dev, Required: dev == "", Secret: true})
	v, ok := r.get(name)
	if !ok {
		if dev == "" {
			r.record(fmt.Errorf("%s is required", name))
		}
		return dev
	}
	return v
}

// Int returns the variable as an integer >= min, or def.
func (r *Reader) Int(name string, def, min int) int {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		r.fail(name, v, fmt.Sprintf("want an integer >= %d", min))
		return def
	}
	return n
}

// Bool returns the variable as a boolean, or def.
func (r *Reader) Bool(name string, def bool) bool {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "want true or false")
		return def
	}
	return b
}

// Duration returns the variable as a positive Go duration (e.g. 30s), or def.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	return r.duration(name, def, false)
}

// DurationOrZero is Duration where 0 is allowed too (e.g. no clock-skew leeway).
func (r *Reader) DurationOrZero(name string, def time.Duration) time.Duration {
	return r.duration(name, def, true)
}

func (r *Reader) duration(name string, def time.Duration, zeroOK bool) time.Duration {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		want := "want a positive duration such as 30s"
		if zeroOK {
			want = "want a duration such as 30s, or 0s"
		}
		r.fail(name, v, want)
		return def
	}
	return d
}

// Durations returns the variable as a comma-separated list of positive durations (e.g.
// 5s,5m,30m), or def.
func (r *Reader) Durations(name string, def []time.Duration) []time.Duration {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	var out []time.Duration
	for part := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			r.fail(name, v, "want comma-separated positive durations such as 5s,5m,30m")
			return def
		}
		out = append(out, d)
	}
	return out
}

// URL returns the variable as an absolute URL, or def (which may be empty).
func (r *Reader) URL(name, def string) string {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		r.fail(name, v, "want an absolute URL")
		return def
	}
	return v
}

// OneOf returns the variable when it is one of allowed, or def.
func (r *Reader) OneOf(name, def string, allowed ...string) string {
	v, ok := r.read(name, def)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, v, fmt.Sprintf("want one of %v", allowed))
	return def
}

// SomeOf returns the variable as a comma-separated list of allowed values (spaces around
// each ignored), or nil when it is unset or names anything else.
func (r *Reader) SomeOf(name string, allowed ...string) []string {
	v, ok := r.read(name, "")
	if !ok {
		return nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if !slices.Contains(allowed, item) {
			r.fail(name, v, fmt.Sprintf("want a comma-separated list of %v", allowed))
			return nil
		}
		out = append(out, item)
	}
	return out
}

// Err returns every failure so far, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// NotDefault returns an error naming the variable when value is still its development default
// dev: a process that reaches a real carrier must not run on a secret anyone can read here.
func NotDefault(name, value, dev string) error {
	if value == dev {
		return fmt.Errorf("%s must be set to a secret of its own, not the development default", name)
	}
	return nil
}
