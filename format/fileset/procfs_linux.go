package fileset

import "syscall"

// procSuperMagic is the f_type statfs gives for procfs (linux/magic.h).
const procSuperMagic = 0x9fa0

// onProcFS says whether dir is on procfs, where /proc/<pid>/fd links
// name a process's open files.
func onProcFS(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == procSuperMagic
}
