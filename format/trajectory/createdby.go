package trajectory

import (
	"runtime/debug"

	"github.com/parquet-go/parquet-go"
)

// modulePath is hone's module, looked for in the build info: hone may be
// the program's main module or a library of another program.
const modulePath = "github.com/hone-rl/hone"

// createdByOption sets the footer's created_by. parquet.CreatedBy cannot:
// it writes "version X(build Y)", without the space Parquet's form has, and
// a "(build )" when there is no build.
func createdByOption() parquet.WriterOption {
	bi, ok := debug.ReadBuildInfo()
	return &parquet.WriterConfig{CreatedBy: createdBy(bi, ok)}
}

// createdBy formats created_by as Parquet's writers do, "hone version X
// (build Y)", so that a reader can tell which release wrote a file (readers
// use it to work around a writer's known bugs). X is hone's module version
// from the build info; Y is the VCS revision, known only when hone is the
// main module built from a checkout, with "-dirty" for local changes. A
// build without a version (go run, go test) says "devel"; a binary without
// build info says "unknown".
func createdBy(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "hone version unknown"
	}
	var version, build string
	if bi.Main.Path == modulePath {
		version = bi.Main.Version
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" && modified == "true" {
			rev += "-dirty"
		}
		build = rev
	} else {
		// The revision in the settings is the program's, not hone's.
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
				break
			}
		}
	}
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	if build == "" {
		return "hone version " + version
	}
	return "hone version " + version + " (build " + build + ")"
}
