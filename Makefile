# The project's own set-up: every target creates .venv and installs agc into it when
# needed, so a fresh machine with only python3 and make can run `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs into the one venv: the runtime alone for `make demo` (no extras, no tools),
# the runtime with every extra and the dev tools for the test targets. Each stamp is
# made by the same recipe with its own pip extras; the test install on top of a demo venv
# upgrades it, and a test venv runs the demo as it is.
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.runtime
$(STAMP): EXTRAS := [dev,all]
$(RUNTIME_STAMP): EXTRAS :=

.PHONY: demo test test-thorough lint typecheck typecheck-then-smoke unit e2e e2e-clients clean-e2e bench bench-quick bench-smoke clean

# --no-compile: Python byte-compiles each module the first time it is imported (and keeps
# the .pyc), so the install does not compile the ~8,700 modules of the dependencies up
# front (about 40 CPU seconds): the test targets import about a fifth of them.
# Keeping the .pyc needs PYTHONDONTWRITEBYTECODE unset: where a shell sets it, every Python
# process the targets start (each test worker, each `agc` or moto server a test starts)
# would compile every module it imports again, from source.
unexport PYTHONDONTWRITEBYTECODE
$(STAMP) $(RUNTIME_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.$(EXTRAS)'
	@touch $@

# The demo's files go to this clone's .cache/agc/demo (ignored by git; each `make demo`
# replaces them), not to the user's ~/.cache/agc/demo, which two clones or two users of
# one HOME would share and replace under each other.
demo: $(if $(wildcard $(STAMP)),$(STAMP),$(RUNTIME_STAMP))
	XDG_CACHE_HOME='$(CURDIR)/.cache' $(BIN)/agc demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The unit suite in PYTEST_WORKERS processes (pytest-xdist; `auto`: one per core).
# Hypothesis runs the profile HYPOTHESIS_PROFILE names: `default` (a fraction of each
# property's examples) unless `make test-thorough` asks for `thorough` (the full counts).
PYTEST_WORKERS ?= auto
unit: $(STAMP)
	$(BIN)/pytest --ignore=tests/e2e -n $(PYTEST_WORKERS) --dist worksteal

# The end-to-end suite: the real Codex CLI and Claude Code (versions pinned in
# tests/e2e/clients.py, installed from the npm registry into $(E2E_CACHE) on first use)
# against a scripted model server on 127.0.0.1. See docs/e2e.md.
E2E_CACHE ?= .cache/e2e
export AGC_E2E_CACHE := $(abspath $(E2E_CACHE))

# The clients spend much of a test waiting (on the model server, on a killed process, on
# node starting), so the suite runs in E2E_WORKERS processes; tests sharing one client's
# module-scoped run stay in one worker (--dist loadgroup, groups set in tests/e2e).
E2E_WORKERS ?= 2
e2e: $(STAMP)
	$(BIN)/pytest tests/e2e -n $(E2E_WORKERS) --dist loadgroup

# Install (or check) the pinned clients only: for warming a CI cache.
e2e-clients: $(STAMP)
	$(BIN)/python -m tests.e2e.clients

# `make test`: lint, then three jobs at once: the unit suite, the end-to-end suite, and mypy
# followed by the benchmark smoke run (bench-smoke: the command must run and write its
# results, benchmarks/results/tmp/smoke.*; it asserts nothing about speed). Each suite
# spends much of its time waiting (on a killed process, a server's deadline, node
# starting a client), so on 2 cores the three keep both busy where one after another left
# one idle. Each job's output is printed whole when it ends (--output-sync), and any
# failing fails `make test`.
test: lint
	$(MAKE) --no-print-directory --jobs=3 --output-sync=target unit e2e typecheck-then-smoke

typecheck-then-smoke: typecheck
	$(MAKE) --no-print-directory bench-smoke

# `make test` with every property test at its full example count and every exhaustive
# loop whole (CONTRIBUTING.md, "Tests").
test-thorough: export HYPOTHESIS_PROFILE := thorough
test-thorough: test

# The full suite (1 GiB, 7 rounds, about 15 min on 2 cores, 1,000-run moto S3 store included): benchmarks/results/latest.{json,md}
# and the tables in README.md's Performance section.
# Pass options with BENCH_ARGS, e.g. make bench BENCH_ARGS="--size 256MiB --only digest".
bench: $(STAMP)
	$(BIN)/python -m benchmarks --update-readme $(BENCH_ARGS)

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks --quick

# `python -m benchmarks` end to end (arguments, the run, both files written) on the
# start-up, digest and close suites, one round on 2 MiB. Every suite runs, on these inputs
# and with its results checked, in the unit suite (tests/benchmarks/test_harness.py's
# quick run), so a second run of all of them here would only repeat it.
bench-smoke: $(STAMP)
	$(BIN)/python -m benchmarks --quick --rounds 1 --size 2MiB --only startup,digest,close --name smoke

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The client cache is kept by `make clean`; remove it with `make clean-e2e`.
clean-e2e:
	rm -rf $(E2E_CACHE)
