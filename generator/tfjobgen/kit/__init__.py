"""What the commands share, and the KRM function's path never imports.

    owned    ports and processes tfjobgen takes on this machine, sweeping what it left behind, and
             SIGTERM unwinding as Ctrl-C does, so that a killed command still cleans up
    table    plain-text tables for people: aligned columns, numbers right-aligned
    ps_load  the PS's load for people: bytes per PS, shares, max/mean against the balance goal
    files    writing several files all or nothing (hydrate, run-local, plan --png, diff -o)
    crd_yaml upstream CRDs' YAML read as the API server reads it (a lone `=` is a string)
    caches   where what is built once per machine lives (~/.cache/tfjobgen/<what>): tools, images, registry

Imported by the command line (cli.py), planner/, local/, cluster/, images/, gitops/ and status/; it imports shared/ only
(docs/design.md, "Layers"). This face imports nothing.
"""
