"""What `make cluster-tools` and `make images` make, before any cluster runs it: the Go programs (built from
Go modules) and the container images (built without a Docker engine). cluster/ runs both; nothing here
starts a cluster. As kind keeps pkg/build apart from pkg/cluster. (Not
`build`: in tfjobgen that word means building an overlay's objects, `tfjobgen build`.)

    programs  which programs, in which versions (cluster-tools/versions.yaml), and where their binaries are
    go_build  building them from their Go modules into the cache: `tfjobgen cluster tools`
    images/   the container images: `tfjobgen images build|list` (docs/images.md)

This face imports nothing.
"""
