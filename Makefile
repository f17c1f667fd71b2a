PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv lint test demo bench eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# compat: the checkout goes on sys.path by a plain .pth line; the default (lenient) mode imports a
	# finder and pathlib at every start, ~20 ms of each `zg` and of every zg a test runs
	$(BIN)/pip install -q -e '.[test]' --config-settings editable_mode=compat
	$(BIN)/python -m compileall -q zgrep  # an editable install compiles nothing: the first `zg` would pay for it
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check zgrep
	$(BIN)/mypy zgrep

test: lint
	$(BIN)/python -m pytest -q -x -n 2 --dist loadscope --durations=15 tests

demo: $(STAMP)
	$(BIN)/zg index .
	$(BIN)/zg search "how are retries with exponential backoff done" --limit 5

bench: $(STAMP)
	$(BIN)/python bench/semble.py

clean:
	rm -rf $(VENV) .zgrep
