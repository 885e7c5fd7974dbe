package proxy

import (
	"fmt"

	"github.com/hone-rl/hone/collect/internal/jsonnan"
)

// nonJSONNumber words a body's syntax error that is a NaN, Infinity or
// -Infinity value (jsonnan.Find), naming the field and the cause. It
// returns nil for any other error, which is worded as before.
func nonJSONNumber(raw []byte, err error) error {
	path, word, ok := jsonnan.Find(raw, err)
	if !ok {
		return nil
	}
	return fmt.Errorf("%s is %s: JSON has no NaN or Infinity, though Python's json.dumps writes them for float('nan') and float('inf'): send a finite number, or null", path, word)
}
