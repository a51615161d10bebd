# Two commands: `make run` (the nightly job on data/) and `make test`. `make bench` measures speed (benchmarks/README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: run test install clean bench eval browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/lessonweaver run data/

# Test files run on every core (pytest-xdist), each file's tests on one worker so its fixtures are made once.
test: $(STAMP) browser
	$(BIN)/pytest -q -n auto --dist loadfile

# tests/test_html.py opens the HTML report in headless Chromium (Debian's `chromium` package).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:
	command -v chromium >/dev/null || ($(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends chromium)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(ARGS)

# Precision and recall of the detectors on the labelled real runs in ../shared (benchmarks/eval.py).
eval: $(STAMP)
	$(BIN)/python benchmarks/eval.py $(ARGS)

clean:
	rm -rf $(VENV) .prefect reports .pytest_cache lessonweaver.duckdb lessonweaver.duckdb.wal lessonweaver.duckdb.lock \
		lessonweaver.duckdb.writing lessonweaver.duckdb.writing.wal lessonweaver.events
