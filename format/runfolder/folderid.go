package runfolder

import (
	"os"
	"time"
)

// FolderID tells a folder from another made in its place later: a run
// folder deleted and made anew holds another run's steps under the same
// names. os.SameFile's device and inode alone do not tell them apart:
// ext4 gives a folder made just after one was deleted (rm -rf, then a run
// trained again under its name) the deleted folder's inode. The birth
// time does, where the system keeps one (statx on Linux). The zero
// FolderID is a folder that could not be read.
type FolderID struct {
	info os.FileInfo
	born time.Time // zero where the system keeps none
}

// StatFolder returns the FolderID of path (links followed, as os.Stat);
// ok is false where path cannot be read.
func StatFolder(path string) (id FolderID, ok bool) {
	info, err := os.Stat(path)
	if err != nil {
		return FolderID{}, false
	}
	return FolderID{info: info, born: birthTime(path)}, true
}

// Known reports whether id was read (StatFolder's ok).
func (id FolderID) Known() bool { return id.info != nil }

// Same reports whether a and b are one folder: the same device and inode
// and, where both have one, the same birth time. Either unknown: false.
func (a FolderID) Same(b FolderID) bool {
	if !a.Known() || !b.Known() || !os.SameFile(a.info, b.info) {
		return false
	}
	return a.born.IsZero() || b.born.IsZero() || a.born.Equal(b.born)
}
