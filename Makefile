# The two commands a newcomer needs:  make demo  and  make test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
BUILD  := build
export KUSTOMIZE_PLUGIN_HOME := $(CURDIR)/plugins
OVERLAYS := $(patsubst overlays/%/kustomization.yaml,%,$(wildcard overlays/*/kustomization.yaml))

.PHONY: venv demo build rendered diff test test-fast clean

# The virtual environment, rebuilt when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing tfjobgen, its training runtime (tensorflow-cpu) and test tools into $(VENV) ..."
	@$(BIN)/pip install --quiet --disable-pip-version-check -e '.[runtime,test]'
	@touch $@

venv: $(VENV)/.installed

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

# Everything: real kubectl, kpt, git, TensorFlow processes (about 3-4 minutes on 2 cores).
test: venv
	$(BIN)/python -m pytest

# The edit loop: only tests marked `fast` (no kubectl, kpt, git, TensorFlow, socket timeouts or
# checkov; tests/conftest.py marks each test by the tools it reaches).
test-fast: venv
	$(BIN)/python -m pytest -m fast -q

clean:
	rm -rf $(BUILD) $(VENV)
