package cli

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

func testTree(runErr error) *cobra.Command {
	root := &cobra.Command{Use: "tool"}
	root.SetOut(io.Discard)
	var n int
	sub := &cobra.Command{
		Use:  "sub FILE",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runErr },
	}
	sub.Flags().IntVar(&n, "n", 1, "a number")
	root.AddCommand(sub)
	return root
}

func TestExecuteCommandExitCodes(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		args   []string
		runErr error
		want   int
	}{
		{"ok", []string{"sub", "a"}, nil, 0},
		{"run failure", []string{"sub", "a"}, boom, 1},
		{"run bad input", []string{"sub", "a"}, BadInput(boom), 2},
		{"run usage", []string{"sub", "a"}, Usage(boom), 2},
		{"run cancelled", []string{"sub", "a"}, context.Canceled, 130},
		{"unknown flag", []string{"sub", "--nope", "a"}, nil, 2},
		{"bad flag value", []string{"sub", "--n", "x", "a"}, nil, 2},
		{"missing argument", []string{"sub"}, nil, 2},
		{"unknown command", []string{"nope"}, nil, 2},
		{"help topic", []string{"help", "sub"}, nil, 0},
		{"help of the root", []string{"help"}, nil, 0},
		{"unknown help topic", []string{"help", "nope"}, nil, 2},
	}
	for _, tc := range tests {
		err := ExecuteCommand(context.Background(), testTree(tc.runErr), tc.args)
		if got := ExitCode(err); got != tc.want {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, got, err, tc.want)
		}
		// A usage error in the subcommand points to its own --help; one
		// that found no subcommand, to the root's.
		want := "tool sub"
		if tc.args[0] != "sub" {
			want = "tool"
		}
		if isUsageOnly(err) && helpCommand(err, "tool") != want {
			t.Errorf("%s: usage error points to %q --help, want %q", tc.name, helpCommand(err, "tool"), want)
		}
	}
}
