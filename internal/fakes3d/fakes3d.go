// Package fakes3d runs an S3 server that keeps its objects in memory
// (github.com/johannesboyne/gofakes3) over real HTTP on a local port, and
// names its buckets as the hone commands take them: s3:// URLs whose query
// points at the server. It lists as S3 does, page by page, where gofakes3
// does not (see listing). Tests and the local pipeline runner use it to run
// stages against object storage without a cloud. It also links the s3://
// driver (format/fileset/blobdrivers), so a test that imports it can read
// and write those URLs in-process.
package fakes3d

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
)

// Server is a running fake S3.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string

	be   *s3mem.Backend
	srv  *http.Server
	ln   net.Listener
	errc chan error

	mu       sync.Mutex
	requests map[string]int // by HTTP method
	sent     int64          // response body bytes
	conns    int            // TCP connections accepted
	refuse   bool           // writes and deletes answered 403 (RefuseWrites)
	refused  int            // requests so answered
	stall    chan struct{}  // while not nil, requests wait for its close (Stall)
	stallAt  string         // "/bucket/key": only requests about that folder wait (StallUnder)
	stalled  int            // requests held so
}

// Start serves a fake S3 on addr ("127.0.0.1:0" for any free port) with
// the named buckets made.
func Start(addr string, buckets ...string) (*Server, error) {
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			return nil, fmt.Errorf("fake S3: make bucket %q: %w", b, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fake S3: %w", err)
	}
	s := &Server{Endpoint: "http://" + ln.Addr().String(), be: be, ln: ln, errc: make(chan error, 1), requests: map[string]int{}}
	h := gofakes3.New(listing{be}, gofakes3.WithAutoBucket(false)).Server()
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.requests[r.Method]++
			refuse := s.refuse && r.Method != http.MethodGet && r.Method != http.MethodHead
			if refuse {
				s.refused++
			}
			stall := s.stall
			if stall != nil && !about(r, s.stallAt) {
				stall = nil
			}
			if stall != nil {
				s.stalled++
			}
			s.mu.Unlock()
			if stall != nil {
				select {
				case <-stall: // switched back: served as if it came now
				case <-r.Context().Done(): // the client gave up on it
					return
				}
			}
			if refuse {
				writeAccessDenied(w)
				return
			}
			h.ServeHTTP(&countingWriter{ResponseWriter: w, s: s}, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.mu.Lock()
				s.conns++
				s.mu.Unlock()
			}
		},
	}
	go func() { s.errc <- s.srv.Serve(ln) }()
	return s, nil
}

// Query is the URL query that points an s3:// URL at this server.
func (s *Server) Query() string {
	return "endpoint=" + s.Endpoint + "&use_path_style=true&disable_https=true&region=us-east-1"
}

// URL names key in bucket on this server ("" names the bucket's top).
func (s *Server) URL(bucket, key string) string {
	return "s3://" + bucket + "/" + key + "?" + s.Query()
}

// Env is the environment a client of this server needs: keys for the AWS
// SDK to sign with (the fake takes any) and no reach for this machine's
// own AWS configuration or instance metadata. dir is a folder for the
// empty AWS config files.
func Env(dir string) []string {
	return []string{
		"AWS_ACCESS_KEY_ID=fake",
		"AWS_SECRET_ACCESS_KEY=fake",
		"AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + dir + "/aws-config",
		"AWS_SHARED_CREDENTIALS_FILE=" + dir + "/aws-credentials",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// RefuseWrites makes the server answer every write and delete (any
// method but GET and HEAD) 403 AccessDenied, as S3 answers credentials
// that may only read, until it is called again with false: a test sees a
// store that refuses from the start, or one whose credentials are revoked
// during a run and restored later. Reads are served as before.
func (s *Server) RefuseWrites(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// Stall makes the server take each request it gets and answer none until
// it is called again with false, as a store that accepts connections and
// then hangs does (an overloaded gateway, a connection that went dead
// without a reset): a test sees whether its client gives up. A held
// request is served once the stall is switched off, unless its client
// went away before; Close switches it off.
func (s *Server) Stall(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.stall == nil:
		s.stall = make(chan struct{})
	case !on && s.stall != nil:
		close(s.stall)
		s.stall = nil
	}
	s.stallAt = ""
}

// StallUnder is Stall for one folder of a bucket: a read of an object
// under key, or a listing of a prefix under it, is held; the rest of the
// store answers. A test sees one run's folder that hangs (a slow or stuck
// part of a store) beside others that answer. Stall(false) ends it.
func (s *Server) StallUnder(bucket, key string) {
	s.Stall(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallAt = "/" + bucket + "/" + strings.TrimSuffix(key, "/") + "/"
}

// about reports whether r is about the folder at ("/bucket/key/"), all of
// the store for "": an object's path under it, or a listing of the bucket
// whose prefix is under it.
func about(r *http.Request, at string) bool {
	if at == "" {
		return true
	}
	if strings.HasPrefix(r.URL.Path, at) {
		return true
	}
	bucket, _, _ := strings.Cut(strings.TrimPrefix(at, "/"), "/")
	prefix := r.URL.Query().Get("prefix")
	return strings.TrimSuffix(r.URL.Path, "/") == "/"+bucket && prefix != "" && strings.HasPrefix("/"+bucket+"/"+prefix, at)
}

// Stalled is how many requests Stall held.
func (s *Server) Stalled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// Refused is how many requests RefuseWrites answered 403.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// writeAccessDenied answers as S3 does a request its credentials may not
// make: the SDK reads the code from the XML body.
func writeAccessDenied(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
}

// Requests is how many requests of the HTTP method were served.
func (s *Server) Requests(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

// Connections is how many TCP connections the server accepted: a client
// that shares its connections opens few, one that makes a new client for
// each object one (or more) an object.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// SentBytes is how many response body bytes were sent.
func (s *Server) SentBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// Close stops the server.
func (s *Server) Close(ctx context.Context) error {
	// Shutdown waits for the requests in flight: held ones are let go.
	s.Stall(false)
	err := s.srv.Shutdown(ctx)
	if serr := <-s.errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

type countingWriter struct {
	http.ResponseWriter
	s *Server
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.s.mu.Lock()
	c.s.sent += int64(n)
	c.s.mu.Unlock()
	return n, err
}
