package runfolder

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthTime is path's birth time (statx's btime), zero where the file
// system keeps none or it cannot be read.
func birthTime(path string) time.Time {
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st) != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}
