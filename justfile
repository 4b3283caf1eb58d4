# Theus development recipes. `just --list` shows them.

venv := ".venv"
py := venv / "bin/python"

# Create the virtual environment with runtime, dev and bench dependencies.
setup:
    test -x {{py}} || python3 -m venv {{venv}}
    {{py}} -m pip install -q -e ".[dev,bench]"

# Run the whole test suite.
test *args: setup
    {{py}} -m pytest {{args}}

# Lint: ruff (rules and format), the import contracts (pyproject.toml) and the type checker.
lint: setup
    {{venv}}/bin/ruff check .
    {{venv}}/bin/ruff format --check .
    {{venv}}/bin/lint-imports
    {{py}} -m mypy

# Benchmarks print figures; pass a real repository checkout, e.g. `just bench ~/src/mypy`.
bench path: setup
    {{py}} bench/index.py {{path}}
    {{py}} bench/recall_scale.py
    {{py}} bench/watch.py {{path}}

# Index the current folder (or run theus with the given arguments, e.g. `just run status`).
run *args: setup
    {{venv}}/bin/theus {{ if args == "" { "index" } else { args } }}
