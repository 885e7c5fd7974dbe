package fileset

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// lookupWait bounds each host name lookup of sameAddress: the check runs
// before anything starts, and a resolver that does not answer must not
// hold the run up for its own minutes-long retries.
const lookupWait = 5 * time.Second

// storeParams are the query parameters of an object-store URL of scheme
// that say which store (which server, which account) a bucket is on: two
// URLs that give one of them with different values may name two objects
// of one bucket and key. Every other parameter (region, use_path_style,
// disable_https, awssdk, profile…) changes how the store is reached, not
// which object is meant.
func storeParams(scheme string) []string {
	switch strings.ToLower(scheme) {
	case "s3":
		return []string{"endpoint"}
	case "azblob":
		return []string{"storage_account", "domain"}
	}
	return nil
}

// sameObject reports whether the object-store URLs a and b may name one
// object: the same scheme, bucket and key (as the store takes it), and,
// of each parameter in storeParams that both give, the same value. One
// that gives an endpoint while the other does not is the same object, as
// the other's comes from the environment (AWS_ENDPOINT_URL) or a config
// file, which may well be that one. ok is false where either does not
// parse: the caller's other checks decide. Where in doubt it says same:
// a stage that asks before writing over an input then refuses, with a
// message, where one that took two names of an object for two objects
// wrote over its input.
func sameObject(ctx context.Context, a, b string) (same, ok bool) {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false, false
	}
	// Bucket names are lower case on every store; a host in upper case
	// is the same name to DNS.
	if !strings.EqualFold(ua.Scheme, ub.Scheme) || !strings.EqualFold(ua.Host, ub.Host) || cleanKey(ua.Path) != cleanKey(ub.Path) {
		return false, true
	}
	qa, qb := ua.Query(), ub.Query()
	for _, p := range storeParams(ua.Scheme) {
		va, vb := qa.Get(p), qb.Get(p)
		if va == "" || vb == "" {
			continue
		}
		if p == "endpoint" {
			if !sameEndpoint(ctx, va, vb) {
				return false, true
			}
		} else if !strings.EqualFold(va, vb) {
			return false, true
		}
	}
	return true, true
}

// sameEndpoint reports whether two endpoint URLs may be one server: the
// same path (a trailing "/" aside), the same port where both say one, a
// scheme's default port counting as said (http://minio and
// http://minio:80 are one), and the same host: one name in any case, or
// two names of one address (sameAddress). Credentials in them
// (http://user:pass@host) name no other server. One that does not parse
// as a URL with a host may be anything: the same.
func sameEndpoint(ctx context.Context, a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil || ua.Host == "" || ub.Host == "" {
		return true
	}
	if strings.TrimRight(ua.Path, "/") != strings.TrimRight(ub.Path, "/") {
		return false
	}
	if pa, pb := endpointPort(ua), endpointPort(ub); pa != "" && pb != "" && pa != pb {
		return false
	}
	return strings.EqualFold(ua.Hostname(), ub.Hostname()) || sameAddress(ctx, ua.Hostname(), ub.Hostname())
}

// sameAddress reports whether host names a and b resolve to an address
// in common: localhost and 127.0.0.1, or a cluster service's short name
// and its full one (minio, minio.store.svc.cluster.local), reach one
// server on one port, and compared as written they were two stores, so
// -o naming the input through the other name wrote over it. Two stores
// behind one proxy address (an ingress serving each by its host name)
// are taken for one: a run refused with a message, where the other way
// lost an input. A name that does not resolve shares no address: its
// store cannot be written, and its run fails on that.
func sameAddress(ctx context.Context, a, b string) bool {
	ctx, cancel := context.WithTimeout(ctx, lookupWait)
	defer cancel()
	ia, errA := net.DefaultResolver.LookupIPAddr(ctx, a)
	ib, errB := net.DefaultResolver.LookupIPAddr(ctx, b)
	if errA != nil || errB != nil {
		return false
	}
	return slices.ContainsFunc(ia, func(x net.IPAddr) bool {
		return slices.ContainsFunc(ib, func(y net.IPAddr) bool { return x.IP.Equal(y.IP) })
	})
}

// endpointPort is u's port, or its scheme's default ("" for a scheme
// without one).
func endpointPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
