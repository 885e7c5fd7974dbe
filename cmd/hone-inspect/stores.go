package main

// Every name this command takes may be an object-store URL (s3://, gs://,
// azblob://): linking the drivers here keeps their SDKs out of the
// libraries.
import _ "github.com/hone-rl/hone/format/fileset/blobdrivers"
