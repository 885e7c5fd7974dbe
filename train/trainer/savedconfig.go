package trainer

import (
	"encoding/json"
	"reflect"

	"github.com/hone-rl/hone/format/fileset"
)

// savedConfig is a run's options as train_config.json records them: --out
// and --watch-dir with their endpoint's password masked
// (fileset.RedactURL), as the inputs are by fileset.Set's JSON. The file
// stays in the run folder, is published to the store and shown by
// hone-inspect report, which more people read than the store's keys are
// given to. Nothing reads a recorded --out or --watch-dir back to reach
// the store; a resume compares --out with the command's in that same
// form (samePaths), and --watch-dir may change.
type savedConfig struct{ v any }

// MarshalJSON marshals a copy of the options with Out and WatchDir
// masked: the options themselves are left as they are, for the job that
// still uses them.
func (c savedConfig) MarshalJSON() ([]byte, error) {
	v := reflect.ValueOf(c.v)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return json.Marshal(c.v)
	}
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	for _, name := range []string{"Out", "WatchDir"} {
		if f := cp.FieldByName(name); f.IsValid() && f.Kind() == reflect.String && f.CanSet() {
			f.SetString(fileset.RedactURL(f.String()))
		}
	}
	return json.Marshal(cp.Addr().Interface())
}
