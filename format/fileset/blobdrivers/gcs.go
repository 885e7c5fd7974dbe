//go:build gcs

package blobdrivers

import _ "gocloud.dev/blob/gcsblob" // gs://
