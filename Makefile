# The two commands a newcomer needs:  make demo  and  make test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# checkov (tests/test_checkov.py) lives in its own virtualenv: its pinned dependencies clash with TensorFlow's.
CHECKOV_VENV ?= .venv-checkov
CHECKOV_VERSION := 3.3.30
BUILD  := build
export KUSTOMIZE_PLUGIN_HOME := $(CURDIR)/plugins
OVERLAYS := $(patsubst overlays/%/kustomization.yaml,%,$(wildcard overlays/*/kustomization.yaml))

.PHONY: venv dist checkov cluster-tools images demo build rendered diff repo-checks test test-fast test-generator \
        test-gitops test-cluster test-nodes test-act lock clean

# The virtual environment, rebuilt when pyproject.toml or the pins change. constraints.txt pins
# every package, so a fresh clone installs exactly what CI tested (a newer PyYAML once broke a
# fresh clone's make test while CI, with an older one, passed).
EXTRAS := runtime,test,cluster
$(VENV)/.installed: pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing tfjobgen, its training runtime (tensorflow-cpu) and test tools into $(VENV) (minutes, once) ..."
	@$(BIN)/pip install --progress-bar on --disable-pip-version-check -c constraints.txt -e '.[$(EXTRAS)]'
	@# The wheels of the generator's own dependencies, kept: tests/test_dist.py installs tfjobgen's wheel into a
	@# fresh venv with pip --no-index from them, offline (pip's cache is no index).
	@$(BIN)/pip download --quiet --disable-pip-version-check --only-binary=:all: -c constraints.txt -d $(VENV)/wheelhouse \
	  $$($(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"])')
	@touch $@

venv: $(VENV)/.installed

# The wheel and the sdist, into dist/ (docs/gitops.md, "Installing tfjobgen"): built offline by the venv's pinned
# hatchling (python -m build --no-isolation), stamped with the last commit's time so one commit gives the same bytes
# (SOURCE_DATE_EPOCH), then checked as PyPI checks them (twine check --strict).
DIST := dist
dist: venv
	@rm -rf $(DIST) && log=$$(mktemp) && \
	if SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 315532800) \
	   $(BIN)/python -m build --no-isolation --outdir $(DIST) . > "$$log" 2>&1; then rm -f "$$log"; \
	else cat "$$log" >&2; rm -f "$$log"; echo "make dist: python -m build failed (above)" >&2; exit 1; fi
	@$(BIN)/twine check --strict $(DIST)/*
	@cd $(DIST) && sha256sum *

$(CHECKOV_VENV)/.installed: Makefile
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	@echo "installing checkov $(CHECKOV_VERSION) into $(CHECKOV_VENV) (a few minutes, once) ..."
	@$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check 'checkov==$(CHECKOV_VERSION)'
	@touch $@

checkov: $(CHECKOV_VENV)/.installed

# Build every overlay with kubectl's kustomize (the tfjobgen plugin expands the jobs),
# then say what each job became, then train the README's job locally with real TensorFlow.
build: venv
	@mkdir -p $(BUILD)
	@for overlay in $(OVERLAYS); do \
	  kubectl kustomize --enable-alpha-plugins overlays/$$overlay > $(BUILD)/$$overlay.yaml || exit 1; \
	  echo "overlays/$$overlay -> $(BUILD)/$$overlay.yaml ($$(grep -c '^kind:' $(BUILD)/$$overlay.yaml) objects)"; \
	done

demo: build
	@for overlay in $(OVERLAYS); do \
	  echo; echo "== $$overlay"; $(BIN)/tfjobgen summary $(BUILD)/$$overlay.yaml || exit 1; \
	done
	@echo; echo "== tfjobgen run-local jobs/wide-deep.yaml --steps 200"
	@$(BIN)/tfjobgen run-local jobs/wide-deep.yaml --steps 200

# rendered/: what Argo CD syncs in rendered-manifests mode (docs/gitops.md). Commit it.
rendered: venv
	$(BIN)/tfjobgen hydrate

# What this branch does to each cluster, as the pull-request comment shows it.
BASE ?= origin/main
diff: venv
	$(BIN)/tfjobgen diff $(BASE)

# The repository's own jobs, checked as the jobs pipeline checks them, whatever jobs/ and overlays/ hold: every
# job valid, every overlay built (make build), rendered/ what `tfjobgen hydrate` writes. Not the tool's tests:
# those read their own sample repository (tests/fixtures/sample-repo), so a team's jobs never break them.
repo-checks: build
	$(BIN)/tfjobgen validate jobs/
	$(BIN)/tfjobgen hydrate --check

# The local cluster's programs (etcd, Kubernetes, KWOK, kustomize, the controllers), built from Go
# modules into ~/.cache/tfjobgen/cluster-tools (outside the clone): the first time takes minutes
# (docs/benchmarks.md), later runs find them built and take a second.
cluster-tools: venv
	@$(BIN)/tfjobgen cluster tools

# The container images (tfjobgen-runtime, tfjobgen-argocd-plugin, registry.k8s.io/pause), built without a
# Docker engine (mmdebstrap, umoci, pip in a chroot; as root) into ~/.cache/tfjobgen/images, outside the
# clone: about a minute and a half the first time, seconds when nothing changed (docs/images.md).
# The pause image is one binary of `make cluster-tools`.
images: venv cluster-tools
	@$(BIN)/tfjobgen images build

# Everything: real kubectl, kpt, git, checkov, TensorFlow processes, the local cluster (Go-built programs)
# and real nodes (root, the images), in TEST_PROCESSES processes. --dist loadgroup sends each test to
# whichever process is free, but keeps the tests that share a cluster or another module-wide fixture in
# one process (tests/conftest.py groups them): the cluster tier mostly waits on controllers, so more
# processes than cores pay (docs/benchmarks.md, "The test suite"). Every run writes its slowest tests
# and groups to build/test-durations.txt and prints them at the end.
# Four: 16 min 46 s on 2 cores (three: 18 min 43 s; six: 16 min 14 s, the cores then the limit; two under
# --dist loadfile took 24 min 57 s).
TEST_PROCESSES ?= 4
PYTEST := $(BIN)/python -m pytest --dist loadgroup
test: venv checkov cluster-tools images
	$(PYTEST) -n $(TEST_PROCESSES) --slowest-file=$(BUILD)/test-durations.txt

# The edit loop: only tests marked `fast` (no kubectl, kpt, git, TensorFlow, socket timeouts,
# hypothesis or checkov; tests/conftest.py marks each test by the tools it reaches). Under 20 s.
test-fast: venv
	$(BIN)/python -m pytest -m fast -q

# The tiers of `make test` on their own, for an edit loop on one of them or a CI job each. Together they
# are `make test`. What each needs:
# - test-generator: the generator, the runtime and the CLI (tests/*.py, tests/runtime): kubectl, kpt, checkov,
#   TensorFlow, Debian's prometheus; no Go, no root.
# - test-gitops: the GitOps files and Argo CD's health checks (tests/gitops): git, kubectl; no root. One test
#   (diff's placement report, marked cluster) starts local clusters: `make cluster-tools`.
# - test-cluster: the local cluster (tests/cluster): the programs of `make cluster-tools` (Go), tmux, redis-server;
#   no root.
# - test-nodes: real nodes and the images they run (tests/nodes, tests/images): `make cluster-tools`, root for
#   `make images`, containerd, runc, iptables.
HEAVY_TIERS := tests/cluster tests/gitops tests/nodes tests/images tests/act
test-generator: venv checkov
	$(PYTEST) -n $(TEST_PROCESSES) $(addprefix --ignore=,$(HEAVY_TIERS)) --slowest-file=$(BUILD)/test-durations-generator.txt

test-gitops: venv cluster-tools
	$(PYTEST) -n $(TEST_PROCESSES) tests/gitops --slowest-file=$(BUILD)/test-durations-gitops.txt

test-cluster: venv cluster-tools
	$(PYTEST) -n $(TEST_PROCESSES) tests/cluster --slowest-file=$(BUILD)/test-durations-cluster.txt

test-nodes: venv cluster-tools images
	$(PYTEST) -n $(TEST_PROCESSES) tests/nodes tests/images --slowest-file=$(BUILD)/test-durations-nodes.txt

# - test-act: the two GitHub workflows run for real under nektos/act (tests/act): act and the placement preview's
#   programs from `make cluster-tools`, the upstream CRDs in ../shared/crds, pip reaching its package index; no
#   root, no Docker. `make test` runs it with the rest.
test-act: venv cluster-tools
	$(PYTEST) -n $(TEST_PROCESSES) tests/act --slowest-file=$(BUILD)/test-durations-act.txt

# Re-resolve the pins to the newest releases pyproject.toml admits, in a throwaway environment,
# so drift shows up here (run make test after) rather than on somebody's fresh clone.
lock:
	@rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	@.venv-lock/bin/pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@{ sed -n '1,2p' constraints.txt; .venv-lock/bin/pip freeze --exclude-editable; } > constraints.txt.new
	@rm -rf .venv-lock && mv constraints.txt.new constraints.txt
	@git diff --stat constraints.txt

clean:
	rm -rf $(BUILD) $(DIST) $(VENV) $(CHECKOV_VENV)

# The GitOps loop for real (docs/gitops.md): a local cluster and Argo CD syncing a clone of this
# checkout; it commits a job, changes, breaks, fixes and removes it, with a live progress line,
# and ends with a table: commit, what Argo CD did, how long it took.
.PHONY: demo-gitops
demo-gitops: venv cluster-tools
	@$(BIN)/python demos/gitops_loop.py

# The README's job, scaled down, training in containers on two real nodes of a local cluster (root;
# docs/nodes.md): a live line while it trains, a table of its tasks at the end.
.PHONY: demo-nodes
demo-nodes: venv cluster-tools images
	@$(BIN)/python demos/real_nodes.py

# The cluster tier's checks on every Kubernetes release of cluster-tools/versions.yaml (1.30, the default
# 1.34, 1.37): builds the families versions.yaml marks `on_request: true` (a few minutes each, once),
# then rewrites the table of docs/releases.md. 6 to 8 minutes a release on 2 cores; not part of `make test` (docs/releases.md).
.PHONY: releases
releases: venv cluster-tools
	@$(BIN)/tfjobgen cluster tools --on-request
	@$(BIN)/python benchmarks/release_checks.py --write docs/releases.md
