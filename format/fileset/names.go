package fileset

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Join appends path elements to a folder name, a local path or a URL: a
// URL keeps its query at the end ("s3://b/runs?region=x" joined with
// "r1", "latest" is "s3://b/runs/r1/latest?region=x"). Elements are names
// as a folder lists them (Base): in an object-store URL the characters it
// would read otherwise ("%", "?", "#") are escaped.
func Join(dir string, elems ...string) string {
	if _, ok := objectStoreScheme(dir); !ok {
		if m := schemeRE.FindStringSubmatch(dir); m != nil { // a file:// URL
			return strings.TrimSuffix(dir, "/") + "/" + strings.Join(elems, "/")
		}
		return filepath.Join(append([]string{dir}, elems...)...)
	}
	name, query, _ := strings.Cut(dir, "?")
	// All trailing slashes go: "s3://b/p//" joined with "x" is
	// s3://b/p/x, the key a listing of p shows.
	name = strings.TrimRight(name, "/") + "/" + escapeKey(strings.Join(elems, "/"))
	if query != "" {
		name += "?" + query
	}
	return name
}

// Base is the last element of a path or URL as Join takes it: in an
// object-store URL, the key's, unescaped ("s3://b/r/50%25.txt?region=x"
// is "50%.txt").
func Base(name string) string {
	b := base(name)
	if IsURL(name) {
		if u, err := url.PathUnescape(b); err == nil {
			return u
		}
	}
	return b
}

// IsURL reports whether name is an object-store URL (not a local path or a
// file:// URL), whatever drivers are linked.
func IsURL(name string) bool {
	_, ok := objectStoreScheme(name)
	return ok
}

// LocalPath returns the path on this machine of a plain path or a file://
// URL, for a folder handed to code that works on paths (a path comes back
// as it is); an object-store URL is an error.
func LocalPath(name string) (string, error) {
	if IsURL(name) {
		return "", argErrorf(name, "is an object-store URL, not a local path or file:// URL")
	}
	p, _, err := localName(name)
	return p, err
}

func objectStoreScheme(name string) (string, bool) {
	m := schemeRE.FindStringSubmatch(name)
	if m == nil || strings.EqualFold(m[1], "file") {
		return "", false
	}
	return strings.ToLower(m[1]), true
}

// ListDirs returns the names of the folders directly in dir (key prefixes
// in an object store), sorted; names starting with "." are left out.
func ListDirs(ctx context.Context, dir string) ([]string, error) {
	st, err := storeFor(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	switch s := st.(type) {
	case local:
		p, back, err := localName(dir)
		if err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if st, err := os.Stat(filepath.Join(p, e.Name())); err == nil && st.IsDir() {
				names = append(names, back(filepath.Join(p, e.Name())))
			}
		}
	case blobStore:
		if names, err = s.listDirs(ctx, dir); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: listing folders is not supported", dir)
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(base(n), ".") {
			out = append(out, n)
		}
	}
	return out, nil
}

// RemoveAll removes the folder dir and everything in it: a local folder
// (a path or a file:// URL) as os.RemoveAll does, an object-store folder
// by deleting each object under its key prefix. An object store has no
// delete of many objects at once that a reader sees whole: one listing the
// folder meanwhile may see part of it. Removing what is not there is no
// error.
func RemoveAll(ctx context.Context, dir string) error {
	st, err := storeFor(dir)
	if err != nil {
		return err
	}
	switch s := st.(type) {
	case local:
		p, _, err := localName(dir)
		if err != nil {
			return err
		}
		return os.RemoveAll(p)
	case blobStore:
		return s.removeAll(ctx, dir)
	default:
		return fmt.Errorf("%s: removing folders is not supported", dir)
	}
}

// Remove removes the file or object name: a local file (a path or a
// file:// URL) as os.Remove does, an object by deleting its key. Removing
// what is not there is no error.
func Remove(ctx context.Context, name string) error {
	st, err := storeFor(name)
	if err != nil {
		return err
	}
	switch s := st.(type) {
	case local:
		p, _, err := localName(name)
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	case blobStore:
		return s.remove(ctx, name)
	default:
		return fmt.Errorf("%s: removing files is not supported", name)
	}
}

// ReadFile reads a whole file or object. An object replaced while it is
// read is read again, so what comes back is one version of it whole.
func ReadFile(ctx context.Context, name string) ([]byte, error) { return readIn(ctx, nil, name) }

// readIn is ReadFile with the buckets in c shared (nil: a bucket of its
// own).
func readIn(ctx context.Context, c *buckets, name string) ([]byte, error) {
	for try := 1; ; try++ {
		b, err := readOnce(ctx, c, name)
		if err == nil || !errors.Is(err, errChanged) || try == 3 {
			return b, err
		}
	}
}

func readOnce(ctx context.Context, c *buckets, name string) ([]byte, error) {
	f, err := openIn(ctx, c, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, f.Size)
	if _, err := f.ReadAt(b, 0); err != nil && f.Size > 0 {
		return nil, fmt.Errorf("read %s: %w", DisplayName(name), err)
	}
	return b, nil
}

// WriteFile replaces a file or object with data, atomically (Create).
func WriteFile(ctx context.Context, name string, data []byte) error {
	return writeIn(ctx, nil, name, data)
}

// writeIn is WriteFile with the buckets in c shared (nil: a bucket of its
// own).
func writeIn(ctx context.Context, c *buckets, name string, data []byte) error {
	st, err := storeIn(c, name)
	if err != nil {
		return fmt.Errorf("output %w", err)
	}
	out, err := st.Create(ctx, name)
	if err != nil {
		return err
	}
	defer out.Abort()
	if bo, ok := out.(*blobOutput); ok {
		bo.held = true
	}
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", DisplayName(name), err)
	}
	return out.Commit()
}

// CheckBucket says, for an object-store URL, whether the store has its
// bucket: an error naming the bucket (matching ErrBadArgument, ErrNoBucket
// and fs.ErrNotExist) when it answers that it has none, nil otherwise, and
// for a local name. An output is uploaded when it is committed, at the
// end of a stage's run: checked only then, a misspelt bucket was noticed
// after the whole run (every judge call of a scoring paid for) and the
// output lost. Another failure of the check (a store that lets this
// writer put objects but not list them) is left for the upload to meet.
func CheckBucket(ctx context.Context, name string) error {
	return checkStoreName(ctx, name, false)
}

// CheckOutputObject checks, for an object-store URL, that name can be
// an output, before the stage's work: an object is uploaded only when the
// output is committed, at the end of a run, and a store that would
// refuse it then (no bucket, no keys, credentials that may only read, a
// host that does not resolve) let the whole run be paid for (every model
// or judge call) first. It refuses
//
//   - a bucket the store says it does not have (as CheckBucket does);
//   - a name that is a folder there: objects are under NAME/ (an object
//     NAME beside them, left by such a run, does not make it less of
//     one). A local folder cannot be written as a file (Create says "is a
//     directory"); an object beside a folder can, and was: -o
//     s3://b/round, meant as the folder of a sharded stage's parts, wrote
//     one object "round" that no folder input reads, which every shard
//     replaced;
//   - a store that does not take a write: a small temporary object is
//     written beside name and deleted, as a local output's temporary file
//     is made beside it at Create.
//
// The store's error comes back as any other (with what to set, where its
// SDK does not say: ErrNoCredentials for no keys), but a bucket or
// listing this writer may not read is passed over: a writer allowed to
// put objects only is a working output, which the write tells. The probe's
// delete is best effort for the same reason (a put-only writer may not
// delete); its name starts with "." and marks it temporary, so folder
// inputs pass over it. All of it on one client. Nil for a local name.
func CheckOutputObject(ctx context.Context, name string) error {
	return checkStoreName(ctx, name, true)
}

// checkStoreName is CheckBucket, and CheckOutputObject's further checks
// when output is set, on one client.
func checkStoreName(ctx context.Context, name string, output bool) error {
	st, err := storeFor(name)
	if err != nil {
		return err
	}
	s, ok := st.(blobStore)
	if !ok {
		return nil
	}
	n, b, release, err := s.openBlob(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	there, err := b.IsAccessible(ctx)
	if err == nil && !there {
		return &ArgError{Arg: name, query: true, Err: &noBucketError{bucket: n.prefix}}
	}
	if !output {
		return nil
	}
	if err != nil && gcerrors.Code(err) != gcerrors.PermissionDenied {
		return blobErr(name, err)
	}
	if n.isDir() {
		return nil
	}
	objs, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: n.key + "/"})
	if err != nil && gcerrors.Code(err) != gcerrors.PermissionDenied {
		return blobErr(name, err)
	}
	if len(objs) > 0 {
		return argErrorf(name, "is a folder (objects are under %s/); name an object, or end the name with / for the parts of a sharded stage", DisplayName(name))
	}
	return checkWrite(ctx, b, name, n)
}

// checkWrite writes a small temporary object beside n's key and deletes
// it, as CheckOutputObject says.
func checkWrite(ctx context.Context, b *blob.Bucket, name string, n blobName) error {
	dir, file := path.Split(n.key)
	probe := fmt.Sprintf("%s.%s%swrite-check-%d-%d", dir, file, tempMark, os.Getpid(), time.Now().UnixNano())
	if err := b.WriteAll(ctx, probe, []byte("hone: a check that an output can be written here; delete it\n"), nil); err != nil {
		return fmt.Errorf("output cannot be written: %w", blobErr(name, err))
	}
	_ = b.Delete(ctx, probe)
	return nil
}
