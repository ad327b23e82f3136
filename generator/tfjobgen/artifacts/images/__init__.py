"""tfjobgen's container images, built without a Docker engine: `tfjobgen images build|list`, `make images`
(docs/images.md). Debian by mmdebstrap, Python wheels installed by pip in a chroot, layers by umoci;
reproducible, cached outside the clone.

    command   the CLI: `images build|list [NAME...]`
    catalog   the images' names, tags and references (RUNTIME, PLUGIN, PAUSE, reference())
    store     where built images live; built(name) and require(name) for code that needs one
    recipe    what goes into each image, and the input digest a built one is found by
    dockerfile  the plugin image's recipe as argocd/plugin/Dockerfile, for a Docker engine (written from recipe)
    build     the stages (Debian base, pinned dependencies, tfjobgen's layer), each image's recipe,
              single_binary_image(); the table `make images` prints
    rootfs    root filesystems: mmdebstrap, overlay stages, mtime clamping, layer tars
    oci       OCI layouts through umoci: layers, config, digest, the oci-archive tar
    steps     running the commands: a log per image, a line per stage with its seconds
    inside    what runs in the build's private mount namespace (mounts, chroot, file steps)

Other code calls store.built / store.require and catalog.reference; tests/images runs the runtime
image with runc. This face imports nothing.
"""
