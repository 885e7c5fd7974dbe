package trajectory

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	_ "gocloud.dev/blob/s3blob"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// countingS3 is an S3 server (gofakes3) over real HTTP that counts the
// object reads (GETs of a key) and the body bytes they sent.
type countingS3 struct {
	srv *s3test.Server

	mu       sync.Mutex
	gets     int
	bytes    int64
	inFlight int
	idle     sync.Cond // signalled when inFlight drops to 0
}

func newCountingS3(t *testing.T) *countingS3 {
	t.Helper()
	c := &countingS3{}
	c.idle.L = &c.mu
	c.srv = s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: c.wrap})
	return c
}

// wrap serves the fake h, counting the object reads and their bytes.
func (c *countingS3) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.inFlight++
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			if c.inFlight--; c.inFlight == 0 {
				c.idle.Broadcast()
			}
			c.mu.Unlock()
		}()
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			c.mu.Lock()
			c.gets++
			c.mu.Unlock()
			w = &countedBody{ResponseWriter: w, c: c}
		}
		h.ServeHTTP(w, r)
	})
}

type countedBody struct {
	http.ResponseWriter
	c *countingS3
}

func (b *countedBody) Write(p []byte) (int, error) {
	n, err := b.ResponseWriter.Write(p)
	b.c.mu.Lock()
	b.c.bytes += int64(n)
	b.c.mu.Unlock()
	return n, err
}

func (c *countingS3) url(key string) string {
	return c.srv.URL("bkt", key)
}

// since returns the object reads and bytes since the last call, once no
// request is being served.
func (c *countingS3) since(gets *int, bytes *int64) (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.inFlight > 0 {
		c.idle.Wait()
	}
	dg, db := c.gets-*gets, c.bytes-*bytes
	*gets, *bytes = c.gets, c.bytes
	return dg, db
}

// bulkyGroups are n groups of 4 trajectories whose messages carry text
// of about textBytes each, random enough not to compress away.
func bulkyGroups(seed uint64, n, textBytes int) []Group {
	rng := rand.New(rand.NewPCG(seed, 7))
	groups := sampleGroups(seed, n, 4)
	for gi := range groups {
		for ti := range groups[gi].Trajectories {
			tr := &groups[gi].Trajectories[ti]
			if len(tr.Messages) == 0 {
				continue
			}
			text := make([]byte, textBytes)
			for i := range text {
				text[i] = 'a' + byte(rng.IntN(26))
			}
			tr.Messages[0].Content = string(text)
		}
	}
	return groups
}

// writeS3 writes groups as a trajectory file to key and returns its URL
// and size.
func writeS3(t *testing.T, s3 *countingS3, key string, groups []Group, opts WriterOptions) (string, int64) {
	t.Helper()
	name := s3.url(key)
	if err := WriteFile(context.Background(), name, groups, opts); err != nil {
		t.Fatal(err)
	}
	f, err := fileset.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return name, f.Size
}

// footerLen is the length of the file's footer, as its last 8 bytes say.
func footerLen(t *testing.T, name string) int64 {
	t.Helper()
	f, err := fileset.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tail [8]byte
	if _, err := f.ReadAt(tail[:], f.Size-8); err != nil {
		t.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint32(tail[:4]))
}

// Reading a trajectory file over S3 fetches about the file, once, in a
// request per row group and two or three for the magic number and the
// footer; opening it (the footers only) fetches the footer and a few KiB;
// reading one column fetches that column. Measured before the fix (a
// single 1 MiB read-ahead buffer, the footer read again by Next): 1.53x
// the file in 12 requests for one row group, 1.49x in 17 for eight; Open
// alone 146 KB and 236 KB in 5 requests each.
func TestS3FetchBytes(t *testing.T) {
	s3 := newCountingS3(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		groups    int
		rowGroups int64 // WriterOptions.RowGroupBytes
	}{
		{"small", 40, 0},          // one row group, about 0.55 MB
		{"large", 240, 512 << 10}, // 8 row groups, about 3.4 MB
	} {
		name, size := writeS3(t, s3, tc.name+".parquet", bulkyGroups(1, tc.groups, 4<<10), WriterOptions{RowGroupBytes: tc.rowGroups})
		footer := footerLen(t, name)
		var g0 int
		var b0 int64
		s3.since(&g0, &b0)
		r, err := Open(ctx, fileset.Files(name))
		if err != nil {
			t.Fatal(err)
		}
		og, ob := s3.since(&g0, &b0)
		n := 0
		for {
			_, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		r.Close()
		rg, rb := s3.since(&g0, &b0)
		groups := r.Files()[0].RowGroups
		t.Logf("%s: %d bytes, footer %d, %d row groups: Open %d requests %d bytes; Next %d requests %d bytes; in all %.3fx the file",
			tc.name, size, footer, groups, og, ob, rg, rb, float64(ob+rb)/float64(size))
		if n != tc.groups {
			t.Fatalf("%s: read %d groups, want %d", tc.name, n, tc.groups)
		}
		if tc.name == "large" && (size < 3<<20 || groups < 4) {
			t.Fatalf("the large case is %d bytes in %d row groups; want more than 3 MiB in several", size, groups)
		}
		if want := fileset.HeadWindow + max(fileset.ReadAround, footer+8); og > 3 || ob > int64(want) {
			t.Errorf("%s: Open fetched %d bytes in %d requests; want at most %d in 3", tc.name, ob, og, want)
		}
		if want := size + size/20; og+rg > groups+3 || ob+rb > want {
			t.Errorf("%s: reading the %d-byte file fetched %d bytes in %d requests; want at most %d (1.05x) in %d", tc.name, size, ob+rb, og+rg, want, groups+3)
		}
	}
}

// Reading one column chunk by chunk, each announced with WillRead, fetches
// that column's chunks and the footer, not its neighbours (before the fix:
// 694 KB for a 1 KB column).
func TestS3FetchOneColumn(t *testing.T) {
	s3 := newCountingS3(t)
	ctx := context.Background()
	name, _ := writeS3(t, s3, "cols.parquet", bulkyGroups(2, 240, 4<<10), WriterOptions{RowGroupBytes: 512 << 10})
	footer := footerLen(t, name)
	var g0 int
	var b0 int64
	s3.since(&g0, &b0)
	f, err := fileset.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := parquet.OpenFile(f, f.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		t.Fatal(err)
	}
	col, ok := pf.Schema().Lookup("env")
	if !ok {
		t.Fatal("no column env")
	}
	var chunkBytes int64
	values := 0
	for i, rg := range pf.RowGroups() {
		m := pf.Metadata().RowGroups[i].Columns[col.ColumnIndex].MetaData
		off := m.DataPageOffset
		if m.DictionaryPageOffset > 0 {
			off = min(off, m.DictionaryPageOffset)
		}
		f.WillRead(off, m.TotalCompressedSize)
		chunkBytes += m.TotalCompressedSize
		pages := rg.ColumnChunks()[col.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			values += int(p.NumValues())
			parquet.Release(p)
		}
		pages.Close()
	}
	if values < 240*4 {
		t.Fatalf("read %d values, want one or more per trajectory (%d)", values, 240*4)
	}
	g, b := s3.since(&g0, &b0)
	t.Logf("one column of %d bytes in %d row groups: %d requests, %d bytes (footer %d)", chunkBytes, len(pf.RowGroups()), g, b, footer)
	if want := chunkBytes + fileset.HeadWindow + max(fileset.ReadAround, footer+8); b > want {
		t.Errorf("reading one column fetched %d bytes; want at most %d (its chunks %d, the footer and the magic number)", b, want, chunkBytes)
	}
}
