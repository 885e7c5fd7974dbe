//go:build !linux

package runfolder

// swapFolders exchanges the folders a and b: by two renames where the
// system has no exchange of its own (swapByRenames).
func swapFolders(a, b string) error { return swapByRenames(a, b) }
