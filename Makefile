# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv (Python 3.11) and install agentkern into it when it is missing or stale.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.agentkern-installed

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,ray]' 2>&1 | grep -v "is ignored: it is neither" || true
	$(BIN)/python -c "import agentkern, torch, ray; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded default: the built-in model, no keys, no network.
demo: $(STAMP)
	$(BIN)/agentkern optimize softmax --target cpu

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Harness overhead per evaluation (not a test: it prints figures, it does not assert them).
bench: $(STAMP)
	$(BIN)/python benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info
