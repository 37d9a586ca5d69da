# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench venv clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	# torch first, pinned: an unpinned torch would pull gigabytes of CUDA wheels
	$(VPY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/fluidcompat run --device emulated-gpu samples/device_guard_crop.py

lint: $(STAMP)
	$(VENV)/bin/ruff check fluidcompat fluidcompat_ops tests bench
	$(VENV)/bin/ruff format --check fluidcompat fluidcompat_ops tests bench

test: $(STAMP) lint
	$(VPY) -m pytest -q -x

# glibc would hand freed buffers over 128 KiB back to the kernel and fault them in again on the next
# step; on a VM that swings the CNN figures by +-30% either way. Both sides run in one process, so
# keeping the memory (these two settings) steadies the ratios without favouring either.
bench: $(STAMP)
	MALLOC_MMAP_THRESHOLD_=4000000000 MALLOC_TRIM_THRESHOLD_=4000000000 $(VPY) bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
