package trajectory

import (
	"slices"
	"testing"
)

// What hone-serve writes as logprobs tokens (LogprobTokenName) reads back
// as the same ids; token_ids, when a server sent them, come first.
func TestLogprobTokenNameRoundTrip(t *testing.T) {
	ids := []int32{0, 7, 151643}
	var names []string
	for _, id := range ids {
		names = append(names, LogprobTokenName(id))
	}
	if got := LogprobTokenIDs(names); !slices.Equal(got, ids) {
		t.Errorf("LogprobTokenIDs(%q) = %v, want %v", names, got, ids)
	}
	if got := SampledIDs(nil, names); !slices.Equal(got, ids) {
		t.Errorf("SampledIDs without token_ids = %v, want %v", got, ids)
	}
	if got := SampledIDs([]int32{1, 2, 3}, names); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("SampledIDs with token_ids = %v, want them", got)
	}
	if got := SampledIDs(nil, []string{"hello", LogprobTokenName(3)}); got != nil {
		t.Errorf("SampledIDs of text tokens = %v, want nil", got)
	}
}
