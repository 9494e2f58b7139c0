# The two commands a new machine needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# On a machine without a GPU, install torch's CPU build first so nothing pulls the multi-GB CUDA wheels.
# (This workplace serves torch==2.13.0 as a local CPU wheel; elsewhere add
#  TORCH_CPU="torch --index-url https://download.pytorch.org/whl/cpu".)
TORCH_CPU ?= torch==2.13.0
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo 1)

.PHONY: setup demo test lint proto check-proto clean wheel

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	@if [ -z "$(HAS_GPU)" ]; then echo "no GPU: installing torch's CPU build ($(TORCH_CPU))"; \
	    $(BIN)/pip install -q $(TORCH_CPU); fi
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

# The tool's own wheel, for installing elsewhere or publishing beside bundle wheels (tuned-kernels index).
wheel: $(STAMP)
	rm -rf build/lib  # files moved or removed since the last build must not ship
	$(BIN)/python -m build --wheel --no-isolation -o dist .

demo: $(STAMP)
	$(BIN)/python ci/demo.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# mypy sees the installed layout: a link tree mapping the four folders into tuned_kernels/
	@rm -rf build/typecheck && mkdir -p build/typecheck && cp -rs $(CURDIR)/tuned_kernels build/typecheck/ && \
	    for d in hardware aot packager registry; do cp -rs $(CURDIR)/$$d build/typecheck/tuned_kernels/$$d; done
	cd build/typecheck && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p tuned_kernels

test: lint
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# Regenerates the committed protobuf code from the .proto (tests fail when the two drift apart).
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. tuned_kernels/results/results.proto

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
