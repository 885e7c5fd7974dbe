// Package servedmodels lists the models an OpenAI-compatible server
// serves (GET models), for the error that stops a run at a model the
// server does not know: collect's --model and score's --judge-model are
// answered 404 the same way, and the user needs the names either way.
//
// It imports nothing of ours, so that every stage may use it.
package servedmodels

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// Timeout bounds the call that lists the models: the run has failed
// already, and the list only helps to say why.
const Timeout = 10 * time.Second

// MaxListed caps the names quoted: OpenAI's list holds about a hundred.
const MaxListed = 20

// Describe returns the models the server behind c lists, comma-separated,
// with the count when more than MaxListed: "a, b" or "a, …, t, … (97 in
// all)"; "" when the server lists none or cannot be asked within Timeout.
func Describe(ctx context.Context, c *openai.Client) string {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := c.Get(ctx, "models", nil, &list); err != nil || len(list.Data) == 0 {
		return ""
	}
	names := make([]string, 0, min(len(list.Data), MaxListed))
	for _, d := range list.Data[:min(len(list.Data), MaxListed)] {
		names = append(names, d.ID)
	}
	s := strings.Join(names, ", ")
	if len(list.Data) > MaxListed {
		s += fmt.Sprintf(", … (%d in all)", len(list.Data))
	}
	return s
}
