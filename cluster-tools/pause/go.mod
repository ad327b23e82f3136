// The pod sandbox's process of real nodes: main.go here, no dependencies (a family of its own
// module: versions.yaml's version `local`).
module tfjobgen.dev/clustertools/pause

go 1.26.0
