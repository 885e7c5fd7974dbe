package fileset

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// storeHint is what to do about err, an error of the store at the
// object-store URL name, where the store's SDK words it so that it does
// not say (a first run against MinIO without an endpoint, or without
// keys): "; …" to put after the error, or "". It names hosts, parameters
// and variables, never a value of the URL's query, so it holds no secret.
func storeHint(name string, err error) string {
	u, perr := url.Parse(name)
	if perr != nil || !strings.EqualFold(u.Scheme, "s3") {
		return ""
	}
	// The SDK's own words where its credential chain ran out: no keys in
	// the environment or the shared files, and no instance role.
	if noCredentials(err) {
		return "; no credentials for S3 were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile in the shared config files (~/.aws/credentials), or run with an instance or workload identity (docs/cluster.md)"
	}
	var dns *net.DNSError
	if !errors.As(err, &dns) || !dns.IsNotFound {
		return ""
	}
	q := u.Query()
	host := strings.ToLower(strings.TrimSuffix(dns.Name, "."))
	// AWS answers every bucket name under a real region's host (a
	// wildcard): one that does not resolve names no region, or this
	// machine's resolver cannot reach AWS.
	const awsCheck = "; on AWS, check the region in that host name (the URL's region, or AWS_REGION) and that this machine resolves AWS's names"
	aws := strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn")
	switch {
	case aws && q.Get("endpoint") == "":
		// No endpoint given anywhere: the SDK asked AWS, for a bucket
		// that may live elsewhere.
		return "; the URL gives no endpoint, so the bucket was looked for on AWS (" + host + "): for another S3 store (MinIO, Ceph, R2…) name it in the URL's query, e.g. ?endpoint=http://minio:9000&use_path_style=true&disable_https=true&region=us-east-1, or set AWS_ENDPOINT_URL_S3 (docs/cluster.md)" + awsCheck
	case aws:
		return "; the store's host " + host + " does not resolve" + awsCheck
	case strings.HasPrefix(host, strings.ToLower(u.Host)+".") && !pathStyle(q):
		// Virtual-hosted style: the SDK put the bucket in front of the
		// endpoint's host, which a store such as MinIO does not serve.
		return "; the bucket was put in front of the endpoint's host name (" + host + "), which a store such as MinIO does not serve: add use_path_style=true to the URL's query (docs/cluster.md)"
	default:
		return "; the store's host " + host + " does not resolve: check the endpoint (the URL's endpoint parameter, or AWS_ENDPOINT_URL_S3)"
	}
}

// ErrNoCredentials is matched by an error of an S3 store that found no
// credentials to sign with (no keys in the environment or the shared
// files, no instance role): what to set, bad input as a missing bucket is,
// not a failure that a retry of the same call may get past.
var ErrNoCredentials = errors.New("no credentials for the store")

// noCredentials reports whether err is the SDK's, where its credential
// chain ran out. The SDK says "no EC2 IMDS role found" of any failed
// request to the instance metadata service; one that answered that it
// is busy (throttled, 429) or failing (5xx, 503 down) may have a role and
// did not say there is none: a failure a retry may get past, not keys to
// set. Its other refusals are for good: 404 (no role), and those of
// another cloud's service at its address (Azure's 400 to a request
// without its header, GCE's 403), which has no role to give.
func noCredentials(err error) bool {
	if !strings.Contains(err.Error(), "no EC2 IMDS role found") {
		return false
	}
	var answered interface{ HTTPStatusCode() int }
	if !errors.As(err, &answered) {
		return true
	}
	code := answered.HTTPStatusCode()
	return code != http.StatusTooManyRequests && code < http.StatusInternalServerError
}

// noCredentialsError is a store's error that matches ErrNoCredentials.
type noCredentialsError struct{ err error }

func (e noCredentialsError) Error() string        { return e.err.Error() }
func (e noCredentialsError) Unwrap() error        { return e.err }
func (e noCredentialsError) Is(target error) bool { return target == ErrNoCredentials }

// pathStyle reports whether q asks for path-style requests as the S3
// driver reads it: use_path_style or its older name s3ForcePathStyle, any
// strconv.ParseBool truth ("1", "True"…). With it on, the host looked up
// is the endpoint's own, which may begin with the bucket's name without
// the bucket having been put there.
func pathStyle(q url.Values) bool {
	for _, k := range []string{"use_path_style", "s3ForcePathStyle"} {
		if on, err := strconv.ParseBool(q.Get(k)); err == nil && on {
			return true
		}
	}
	return false
}
