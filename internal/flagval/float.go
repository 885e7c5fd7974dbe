package flagval

import (
	"errors"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// OptionalFloat registers a float flag that has no default value of its
// own: *p holds unset (NaN, or a value such as -1 that the option's
// reader takes for "not given") until the flag is set. --help then shows
// no "(default NaN)" or "(default -1)", which would read as a setting;
// usage says in words what happens without the flag ("default: the
// server's").
func OptionalFloat(fs *pflag.FlagSet, p *float64, name string, unset float64, usage string) {
	*p = unset
	fs.Var(&optionalFloat{p: p, unset: unset}, name, usage)
}

type optionalFloat struct {
	p     *float64
	unset float64
}

// Set parses a finite number; NaN and ±Inf are refused, since every
// setting these flags carry (temperatures, clip ranges) is a plain number.
func (f *optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.New("must be a finite number")
	}
	*f.p = v
	return nil
}

// String is "" while the flag holds its unset value, which is what keeps
// pflag from printing a default.
func (f *optionalFloat) String() string {
	v := *f.p
	if v == f.unset || (math.IsNaN(v) && math.IsNaN(f.unset)) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (f *optionalFloat) Type() string { return "float" }
