# Thin wrappers: the logic lives in the mkdc command and pytest.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
MKDC := $(BIN)/mkdc
PROFILE ?= reference
PROVIDER ?= local
REPORT_DIR ?= reports/$(PROFILE)
GO_EXAMPLE := dispatchers/example-go
# The flags `mkdc bins` builds Kueue with and the suite builds the example with
# (harness/cluster/toolchain.py COMPILE_FLAGS): the example's dependencies are then in Go's build
# cache already, and `go vet` does not compile them again.
GO_BUILD_FLAGS := -trimpath -gcflags=all=-dwarf=false


.PHONY: setup setup-dev system-e2e system-test bins kind-bins doctor test unit e2e matrix lint bench bench-up bench-dispatcher bench-scaling compare selftest workflows clean

# What a run needs (`make e2e`); `setup-dev` adds the linters and what only the tests and
# the benchmark's picture use (mypy, hypothesis, matplotlib, ...): on a fresh machine
# `make e2e` does not wait for them.
setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

# What the machine needs (system packages, a Docker engine for `make test`): installed and
# started by scripts/setup as root or with passwordless sudo, otherwise one message naming
# every missing piece, before anything is built.
system-e2e:
	@scripts/setup --for e2e
system-test:
	@scripts/setup --for test

# uv installs the venv several times faster than pip (docs/benchmarks.md), compiled to
# bytecode as pip does: else every process of the first test run compiles the modules it
# imports (the Kubernetes client's thousands) until one has written them
UV := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python
$(VENV)/.installed: pyproject.toml | system-e2e
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
	$(UV) -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(UV) -e '.[dev]'
	touch $@

bins: setup
	$(MKDC) bins

# the kind provider's tools and offline images too (the kind smoke in `make test`)
kind-bins: setup
	$(MKDC) bins --kind

doctor: setup
	$(MKDC) doctor

# mypy's cache beside the binaries, not in the checkout, so a clean checkout (as CI's) is not
# checked cold (docs/benchmarks.md); a changed file is still checked again (mypy compares
# each file's hash)
CACHE_DIR = $$($(BIN)/python -c 'from harness.cluster.toolchain import cache_dir; print(cache_dir())')
lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	MYPY_CACHE_DIR=$(CACHE_DIR)/mypy $(BIN)/mypy
	@test -z "$$(gofmt -l $(GO_EXAMPLE))" || { gofmt -l $(GO_EXAMPLE); echo "gofmt: run gofmt -w $(GO_EXAMPLE)"; exit 1; }
	cd $(GO_EXAMPLE) && go vet $(GO_BUILD_FLAGS) ./...

unit: setup-dev
	$(BIN)/pytest tests -m "not e2e" -q

# The Go example's unit tests, then in one parallel pytest run: Python's unit tests, the
# e2e tests against real clusters and a few faulty dispatchers the suite must reject
# (TEST_JOBS: docs/benchmarks.md has the figures behind the default).
# The kind smoke runs beside them, its output held until they end. Its clusters' control
# planes run in Docker's cgroup, which the kernel weighs as one task against each of the
# local runs' processes: at equal priority they starved it into TLS handshake timeouts, so
# the local runs go at a lower priority (LOCAL_NICE); they take what kind leaves idle.
TEST_JOBS ?= 4
LOCAL_NICE ?= 10
KIND_SMOKE := tests/e2e/test_kind_smoke.py
test: system-test kind-bins lint
	cd $(GO_EXAMPLE) && go test $(GO_BUILD_FLAGS) ./...
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	echo "kind smoke: started beside the other tests; its output follows theirs"; \
	$(BIN)/pytest $(KIND_SMOKE) -q -rfE -p no:cacheprovider >"$$log" 2>&1 & kind=$$!; \
	nice -n $(LOCAL_NICE) $(BIN)/pytest tests -m "not slow" -q -rfE -n $(TEST_JOBS) \
		--dist worksteal --durations=12 --ignore=$(KIND_SMOKE); rc=$$?; \
	wait $$kind; kind_rc=$$?; echo "kind smoke ($(KIND_SMOKE)):"; cat "$$log"; \
	[ $$rc -eq 0 ] && [ $$kind_rc -eq 0 ]

e2e: system-e2e bins
	$(MKDC) run --profile $(PROFILE) --provider $(PROVIDER) --report-dir $(REPORT_DIR)

# The reference on every Kueue version of the matrix (harness/cluster/versions.py), on the
# checks every dispatcher must pass; a version's binaries are built once, then cached.
# Kueue v0.17 has no MutatingAdmissionPolicy: the reference writes as kueue-admission there.
MATRIX_CHECKS ?= CORE-01,CORE-02,CORE-03,CORE-04,CORE-05,CORE-07,CORE-08
matrix: system-e2e bins
	$(MKDC) run --profile reference --kueue-version v0.19.2 --checks $(MATRIX_CHECKS) \
		--report-dir reports/matrix/v0.19.2
	$(MKDC) bins --kueue-version v0.17.1
	$(MKDC) run --profile reference-kueue-admission --kueue-version v0.17.1 \
		--checks $(MATRIX_CHECKS) --report-dir reports/matrix/v0.17.1

# Every benchmark: figures into benchmarks/figures.json, docs/benchmarks.md's tables
# regenerated from it.
bench: setup-dev bins
	$(BIN)/python -m harness.tools.bench run

bench-up: bins
	$(BIN)/python -m harness.tools.bench_up

# One JSON document: each dispatcher in its own environment, back to back.
BENCH_PROFILES ?= reference,incremental,all-at-once
bench-dispatcher: bins
	mkdir -p reports
	$(BIN)/python -m harness.tools.bench_dispatcher --profiles $(BENCH_PROFILES) > reports/bench-dispatcher.json

# p99 against worker count, as reports/bench-scaling/scaling.{json,png} (needs memory: ~0.5 GiB a worker)
BENCH_WORKERS ?= 4,8,12,16,20
bench-scaling: setup-dev bins
	$(BIN)/python -m harness.tools.bench_scaling --workers $(BENCH_WORKERS) --profiles $(BENCH_PROFILES)

# Scorecards of the built-in dispatchers and the reference, side by side.
COMPARE_PROFILES ?= all-at-once incremental reference
compare: bins
	for p in $(COMPARE_PROFILES); do $(MKDC) run --profile $$p --report-dir reports/$$p || true; done
	$(BIN)/python -m harness.report.compare $(addprefix reports/,$(COMPARE_PROFILES))

# Every faulty dispatcher must be rejected with the expected check IDs.
SELFTEST_JOBS ?= 3
selftest: bins
	$(BIN)/python -m suites.selftest --jobs $(SELFTEST_JOBS)

# The shipped GitHub Actions workflows (ci/github/), each job's steps run as a hosted runner
# runs them: as a non-root user with passwordless sudo (made for the run, then removed).
# The first run on a machine is cold, the next warm (docs/ci.md).
workflows: setup-dev bins
	$(BIN)/pytest tests/e2e/test_workflows_run.py -m slow -s -q -rfE

clean:
	-$(MKDC) down
	rm -rf reports build
