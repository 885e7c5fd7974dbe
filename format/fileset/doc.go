// Package fileset owns how Hone names the files a stage reads and writes:
// the one rule by which input arguments become an ordered set of files, the
// one copy of stdin, and the one atomic writer of outputs. Every stage and
// hone-inspect resolve their inputs here, once, and every reader (the
// trajectory reader included) opens what was resolved, by index, without
// looking at the arguments again.
//
// The input rule, for each argument in order:
//
//   - "-" is standard input, copied once to a temporary file (a Parquet
//     footer sits at the end, so the reader needs random access), which the
//     set's Close removes; "-" may be given once.
//   - A path that exists is taken literally: a file is that file, even when
//     its name holds glob characters ("round[1].parquet"). A named pipe
//     (bash's <(…), /dev/stdin) is copied once, like "-", when the set is
//     resolved; Open of one name copies it for the File it returns.
//   - A directory means the regular files directly in it (not below it)
//     whose names end in the extension asked for (".parquet" unless told
//     otherwise), skipping names that start with "." (temporary outputs),
//     sorted by name. A symbolic link to a regular file is that file (as
//     cat dir/* reads it); one to a folder is not descended into.
//   - Otherwise an argument with *, ?, [ or \ is a glob (filepath.Match syntax),
//     its file matches sorted by name; as in the shell, a name starting with
//     "." matches only a pattern whose last element starts with ".".
//   - Anything else is an error naming the argument, as are a glob that
//     matches nothing, a directory with no such files, a directory or glob
//     that holds a symbolic link whose target does not exist or that
//     loops back to itself (naming the link: passed over, the file it was meant to bring would go untrained
//     without a word), a glob that matches a pipe, device or socket, or a
//     link to one (naming the match: read as a pipe, /dev/zero never ends;
//     name one on its own), and no arguments.
//
// Matches of one argument are sorted; the arguments keep their order; a
// file named twice (a symbolic link and its target included) is read
// once, at its first place (Set.Repeated names the others).
//
// Names are plain paths or URLs. The scheme picks a Store: plain paths and
// file:// URLs are the local file system; s3://, gs://, azblob:// (any
// scheme a gocloud.dev/blob driver registered; format/fileset/blobdrivers
// links the three) are an object store, where a folder is a key prefix and
// a glob may have its characters only in the last element, and not "?",
// which begins the URL's query (a key's "?" is written %3F); any other
// scheme is refused with an error naming it. Object-store names keep their
// query (endpoint, region…) on every name derived from them. Objects are
// read by ranged requests (ReadAhead bytes or more for reads in order,
// ReadAround for a jump, a range announced by File.WillRead in one
// request), bytes held from an earlier request not asked for again, and a body
// that breaks off is asked for again. The files of one Set share a bucket
// (a client, and its connections) per bucket URL, which the set's Close
// closes; Open of a name alone opens a bucket for that file. ListSet is a
// folder's files as such a set. Info (StatFile) stats a file without
// reading it: its size, modification time and, in an object store, ETag
// (of a local file, its device and inode). Errors that blame an argument match
// ErrBadArgument; others come from the operating system, the store or the
// context (the store's, where its SDK does not say what to set — no
// keys, no endpoint, no use_path_style — saying it; no keys matching
// ErrNoCredentials); an absent file or
// object matches fs.ErrNotExist, and one in a
// bucket the store does not have says so, naming the bucket, and matches
// ErrNoBucket too. In an object-store URL a run of "/" is one, and a
// leading one is dropped: s3://b/p/, s3://b/p// and s3://b//p/ name the
// same folder.
//
// Create starts an output: written to a temporary name beside the target
// and renamed over it only by Commit, after an fsync, so that a reader sees
// the old file or the whole new one, never half of it. Missing parent
// folders are made, and removed again by Abort or a failed Commit. An
// object is written to a local temporary file and uploaded by Commit in one
// request (or one multipart upload), which the store shows whole or not at
// all. RemoveAll removes a folder: a local one at once, an object-store
// one object by object.
//
// The package imports nothing of Hone's.
package fileset
