// Package blobdrivers links the object stores fileset reads and writes:
// importing it (for its side effect) registers s3:// with gocloud.dev/blob,
// and gs:// and azblob:// when built with the tags gcs and azblob
// (go build -tags gcs,azblob, as the container image is), so that every
// name a hone command takes may be such a URL. The drivers carry the
// clouds' SDKs, so only the commands import this package, not the
// libraries; measured on hone-inspect: 22.9 MB before object stores, 28.6 MB
// with gocloud.dev/blob and no driver, 42.6 MB with s3://,
// 86.6 MB with all three (Google's SDK alone adds 35 MB). S3's protocol
// also reaches MinIO, Ceph, R2 and Google Cloud Storage's XML API.
//
// URLs follow gocloud.dev's conventions: the query sets what is not in the
// environment, e.g.
// s3://bucket/key?endpoint=http://minio:9000&use_path_style=true&disable_https=true&region=us-east-1;
// credentials come from each cloud's usual chain (AWS_* variables, shared
// config files, instance or workload identity; GOOGLE_APPLICATION_CREDENTIALS;
// AZURE_STORAGE_ACCOUNT and its key or a managed identity).
package blobdrivers

import _ "gocloud.dev/blob/s3blob" // s3://
