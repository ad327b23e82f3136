// The entrypoint a team's own program runs under: main.go and control.go here, no dependencies (a
// family of its own module: versions.yaml's version `local`).
module tfjobgen.dev/clustertools/entry

go 1.26.0
