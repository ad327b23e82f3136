// The CNCF distribution registry with only the filesystem storage driver.
//
// Upstream's cmd/registry registers every storage driver (S3, Azure, GCS, in-memory), the
// CloudFront and redirect middlewares, the pull-through proxy and three auth schemes; the cloud
// SDKs are most of a cold build. A registry that serves a cluster's images from a folder of this
// machine needs none of them: this main registers the filesystem driver and runs upstream's
// commands (`registry serve CONFIG`, `registry garbage-collect CONFIG`). The in-memory cache of
// blob descriptors (`storage.cache.blobdescriptor: inmemory`) is part of the registry package.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if registry.RootCmd.Execute() != nil {
		os.Exit(1)
	}
}
