package flagval

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
)

// PositiveDuration registers a duration flag, def by default, that refuses
// zero and negative values as it parses them. For a bound whose zero has no
// meaning of its own: Options that take 0 for "the default" would
// otherwise take a user's 0, which a sibling flag such as
// --episode-timeout reads as "no limit", for the default without a word.
func PositiveDuration(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var((*positiveDuration)(p), name, usage)
}

type positiveDuration time.Duration

func (d *positiveDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (e.g. 90s, 2m)")
	}
	if v <= 0 {
		return errors.New("must be a positive duration")
	}
	*d = positiveDuration(v)
	return nil
}

func (d *positiveDuration) String() string { return time.Duration(*d).String() }

func (d *positiveDuration) Type() string { return "duration" }
