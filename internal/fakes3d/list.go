package fakes3d

import (
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// listing is the in-memory backend with S3's listing, where gofakes3
// (v1.2.0) departs from it in ways that hide a client's bugs or make
// ones a client does not have:
//   - it ends a page at the last key it read, so a common prefix that
//     ended a page comes again at the top of the next one; S3 lists each
//     once ("rolled-up keys are not returned elsewhere in the response");
//   - it says a page is truncated when any key follows in the bucket,
//     under the prefix or not;
//   - it matches by splitting on the delimiter, so "p/sub/" is listed as
//     an object under "p/" (S3 rolls it into the common prefix "p/sub/"),
//     and leading delimiters of a key are ignored.
//
// Keys are listed in byte order, as S3 lists them, at most MaxKeys
// entries a page (a common prefix counts once), and a page's marker is
// the last key it covers, so the next page starts after every key of a
// common prefix it listed.
type listing struct{ *s3mem.Backend }

func (l listing) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	all, err := l.Backend.ListBucket(name, nil, gofakes3.ListBucketPage{}) // every key, in order
	if err != nil {
		return nil, err
	}
	var pfx, delim string
	if prefix != nil {
		pfx, delim = prefix.Prefix, prefix.Delimiter
	}
	out := gofakes3.NewObjectList()
	var n int64
	for i := 0; i < len(all.Contents); i++ {
		c := all.Contents[i]
		if !strings.HasPrefix(c.Key, pfx) || (page.HasMarker && c.Key <= page.Marker) {
			continue
		}
		if page.MaxKeys > 0 && n == page.MaxKeys {
			out.IsTruncated = true
			break
		}
		n++
		j := -1
		if delim != "" {
			j = strings.Index(c.Key[len(pfx):], delim)
		}
		if j < 0 {
			out.Add(c)
			out.NextMarker = c.Key
			continue
		}
		// Keys under a common prefix are adjacent in byte order: skip to
		// its last, where the next page starts after.
		cp := c.Key[:len(pfx)+j+len(delim)]
		out.AddPrefix(cp)
		for i+1 < len(all.Contents) && strings.HasPrefix(all.Contents[i+1].Key, cp) {
			i++
		}
		out.NextMarker = all.Contents[i].Key
	}
	if !out.IsTruncated {
		out.NextMarker = "" // no continuation token on the last page
	}
	return out, nil
}
