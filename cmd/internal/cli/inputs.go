package cli

import (
	"context"
	"errors"
	"io/fs"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/shard"
)

// Stdin is the input argument that means standard input (and the output
// name that means standard output).
const Stdin = fileset.Stdin

// ResolveInputs is fileset.Resolve with its errors marked for the exit
// code: an argument that names nothing readable (a missing file, a glob
// that matches nothing, "-" twice, an unknown URL scheme) is a usage error,
// a path the system refuses is bad input; a failure to copy stdin is a
// failure of the run. A folder of shard parts that lacks one is bad
// input (shard.CheckFolder). The caller closes the set.
func ResolveInputs(ctx context.Context, args []string, opts fileset.Options) (*fileset.Set, error) {
	if opts.Folder == nil {
		opts.Folder = shard.CheckFolder
	}
	in, err := fileset.Resolve(ctx, args, opts)
	switch {
	case err == nil:
		return in, nil
	case errors.Is(err, shard.ErrMissingPart):
		return nil, BadInput(err)
	case errors.Is(err, fileset.ErrBadArgument):
		return nil, Usage(err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return nil, BadInput(err)
	default:
		return nil, err
	}
}
