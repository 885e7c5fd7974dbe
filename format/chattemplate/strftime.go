package chattemplate

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t with Python's time.strftime directives (C locale),
// which templates such as Llama 3.2's use through strftime_now to print
// today's date. Glibc's "%-d" style (no padding) is honoured as well.
// An unknown directive is an error rather than silently different text.
func strftime(t time.Time, format string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", fmt.Errorf("strftime: format %q ends with %%", format)
		}
		pad := true
		if format[i] == '-' {
			pad = false
			i++
			if i >= len(format) {
				return "", fmt.Errorf("strftime: format %q ends with %%-", format)
			}
		}
		num := func(n, width int) {
			if pad {
				fmt.Fprintf(&sb, "%0*d", width, n)
			} else {
				fmt.Fprintf(&sb, "%d", n)
			}
		}
		switch d := format[i]; d {
		case 'Y':
			num(t.Year(), 4)
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'j':
			num(t.YearDay(), 3)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'f':
			fmt.Fprintf(&sb, "%06d", t.Nanosecond()/1000)
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'w':
			fmt.Fprintf(&sb, "%d", int(t.Weekday()))
		case 'Z':
			name, _ := t.Zone()
			sb.WriteString(name)
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case 'F':
			sb.WriteString(t.Format("2006-01-02"))
		case 'T':
			sb.WriteString(t.Format("15:04:05"))
		case '%':
			sb.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime: unsupported directive %%%c in %q", d, format)
		}
	}
	return sb.String(), nil
}
