package fileset

import (
	"context"
	"testing"
)

// TestSameFileObjectQuery: two URLs of one bucket and key are one object
// whatever their queries say of how to reach it (order, region, path
// style, credentials in the endpoint, an endpoint one of them leaves to
// the environment); only another endpoint or storage account names
// another store. SameFile compared the URLs, query and all, so hone-score
// took -o naming its input with another query for another object and
// wrote a shard's part over the whole input.
func TestSameFileObjectQuery(t *testing.T) {
	const in = "s3://b/x.parquet?endpoint=http://minio:9000&use_path_style=true"
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{in, "s3://b/x.parquet?use_path_style=true&endpoint=http://minio:9000", true},
		{in, "s3://b/x.parquet?endpoint=http://minio:9000&use_path_style=true&region=eu-west-1", true},
		{in, "s3://b/x.parquet", true},
		{in, "s3://b/x.parquet?region=us-east-1", true},
		{in, "s3://B/x.parquet?endpoint=HTTP://MINIO:9000/", true},
		{in, "s3://b//x.parquet?endpoint=http://u:secret@minio:9000", true},
		{"s3://b/x?endpoint=http://minio", "s3://b/x?endpoint=http://minio:80", true},
		{"s3://b/x?endpoint=minio:9000", "s3://b/x?endpoint=http://minio:9000", true},
		{"azblob://c/x?storage_account=acct", "azblob://c/x?storage_account=ACCT&protocol=https", true},
		{"azblob://c/x?storage_account=acct", "azblob://c/x", true},
		{"s3://b/x?endpoint=http://localhost:9000", "s3://b/x?endpoint=http://127.0.0.1:9000/", true},
		{in, "s3://b/x.parquet?endpoint=http://minio2:9000", false},
		{"s3://b/x?endpoint=http://localhost:9000", "s3://b/x?endpoint=http://127.0.0.1:9100", false},
		{"s3://b/x?endpoint=http://127.0.0.2:9000", "s3://b/x?endpoint=http://127.0.0.1:9000", false},
		{in, "s3://b/x.parquet?endpoint=http://minio:9100", false},
		{in, "s3://b/y.parquet?endpoint=http://minio:9000", false},
		{in, "s3://b/X.parquet", false},
		{in, "s3://c/x.parquet", false},
		{in, "gs://b/x.parquet", false},
		{"azblob://c/x?storage_account=one", "azblob://c/x?storage_account=two", false},
		{"azblob://c/x?domain=blob.core.windows.net", "azblob://c/x?domain=blob.core.chinacloudapi.cn", false},
	} {
		if got := SameFile(context.Background(), c.a, c.b); got != c.same {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := SameFile(context.Background(), c.b, c.a); got != c.same {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
		}
	}
}
