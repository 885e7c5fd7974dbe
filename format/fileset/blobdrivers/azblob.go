//go:build azblob

package blobdrivers

import _ "gocloud.dev/blob/azureblob" // azblob://
