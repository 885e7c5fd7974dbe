package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// ExecuteCommand runs a cobra command tree with args under ctx. An error
// that comes before a command's RunE started — an unknown flag or command,
// a wrong number of arguments — is marked as a usage error (exit code 2);
// errors from RunE keep their own marking. A usage error points to the
// --help of the command it came from ("hone-train grpo"), not the root's.
// Cobra's own printing of errors and usage is switched off, since Run
// prints the error once.
func ExecuteCommand(ctx context.Context, root *cobra.Command, args []string) error {
	started := false
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				started = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(root)
	root.SetHelpCommand(helpCommandFor(root))
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !started && ExitCode(err) == ExitFailure && !errors.Is(err, context.Canceled) {
		err = Usage(err)
	}
	if cmd != nil {
		err = ForCommand(cmd.CommandPath(), err)
	}
	return err
}

// helpCommandFor is the "help [command]" subcommand of root. Cobra's own
// answers a topic it does not know ("hone-train help gpro") with the
// root's usage on stdout and exit 0, so a script or a typo passed for
// success; this one makes it a usage error (exit 2) pointing to the
// root's --help, as "hone-train gpro" is.
func helpCommandFor(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, _, err := root.Find(args)
			if cmd == nil || err != nil {
				return ForCommand(root.Name(), Usagef("unknown help topic %q", strings.Join(args, " ")))
			}
			return cmd.Help()
		},
	}
}
