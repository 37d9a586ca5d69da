# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
# where torch comes from: empty for pip's configured index (PyPI: the CUDA build on Linux), or
# https://download.pytorch.org/whl/cpu for the CPU build
TORCH_INDEX ?=
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-models conformance venv clean

# torch 2.13.0 has wheels for CPython 3.10 to 3.14 only (setup.cfg's python_requires): an older $(PY)
# stops here with one line, before a venv is made, instead of in pip's ResolutionImpossible.
PY_CHECK := import sys; v = sys.version_info[:2]; sys.exit(None if (3, 10) <= v <= (3, 14) else \
	"make: $(PY) is Python %d.%d; fluidcompat needs Python 3.10 to 3.14 (the Pythons torch 2.13.0 has wheels for): run make with PY=python3.11 (or any 3.10-3.14)" % v)

$(STAMP): setup.cfg pyproject.toml
	@test -x $(VPY) || $(PY) -c '$(PY_CHECK)'
	test -x $(VPY) || $(PY) -m venv $(VENV)
	# torch first, pinned. From PyPI on Linux torch is the CUDA build (with 3-4 GB of nvidia wheels);
	# TORCH_INDEX=https://download.pytorch.org/whl/cpu takes the CPU build (about 190 MB)
	@echo "make: installing torch 2.13.0 into $(VENV)$(if $(TORCH_INDEX), from $(TORCH_INDEX),) (once; pip shows its progress)"
	$(VPY) -m pip install --disable-pip-version-check --progress-bar on torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	@echo "make: installing fluidcompat (editable) with its test, legacy and export extras into $(VENV)"
	$(VPY) -m pip install --disable-pip-version-check --progress-bar on -e '.[test,legacy,export]'
	touch $(STAMP)

venv: $(STAMP)

# The tutorial's startup program is empty (its program has no parameters): fluid 1.8.5 warned "There are
# no operators in the program to be executed" for it, and so does fluidcompat; the demo leaves it out.
demo: $(STAMP)
	@echo "$(VENV)/bin/fluidcompat run --device emulated-gpu samples/device_guard_crop.py"
	@PYTHONWARNINGS="ignore:There are no operators in the program" \
		$(VENV)/bin/fluidcompat run --device emulated-gpu samples/device_guard_crop.py

lint: $(STAMP)
	$(VENV)/bin/ruff check fluidcompat fluidcompat_ops tests bench conformance
	$(VENV)/bin/ruff format --check fluidcompat fluidcompat_ops tests bench conformance

# the suite over TEST_JOBS pytest-xdist workers (one per core); worksteal hands a worker that ran out
# of tests half of another's queue, so one slow test (a 10,000,000-row embedding, a launched job) at
# the end of a queue does not leave the other core idle. -x: the first failure stops every worker.
TEST_JOBS ?= 2
test: $(STAMP) lint
	$(VPY) -m pytest -q -x -n $(TEST_JOBS) --dist worksteal --durations=15

# glibc would hand freed buffers over 128 KiB back to the kernel and fault them in again on the next
# step; on a VM that swings the CNN figures by +-30% either way. Both sides run in one process, so
# keeping the memory (these two settings) steadies the ratios without favouring either.
bench: $(STAMP)
	MALLOC_MMAP_THRESHOLD_=4000000000 MALLOC_TRIM_THRESHOLD_=4000000000 $(VPY) bench/run_all.py

# fluid 1.8 models (bench/fluid_models.py) under fluidcompat and under the real fluid 1.8.5
# (../shared/tools/fluid18), steps per second and the ratio; then build time against program size and
# memory against a clone every step (bench/program_scaling.py); a few minutes.
bench-models: $(STAMP)
	$(VPY) bench/models.py
	$(VPY) bench/program_scaling.py

# fluid 1.8's own unit tests under fluidcompat, compared per test case with fluid 1.8.5's results
# (../shared/conformance/README.md); about an hour on 2 cores. A full run rewrites docs/conformance.md;
# `make conformance ONLY=test_a.py,test_b.py` (names matched as substrings) runs those files and only
# prints the summary. The run's table, results.json and logs land in $(CONFORMANCE_OUT).
CONFORMANCE ?= ../shared/conformance
CONFORMANCE_OUT ?= build/conformance
CONFORMANCE_JOBS ?= 2
conformance: $(STAMP)
	rm -rf $(CONFORMANCE_OUT)
	$(PY) $(CONFORMANCE)/run.py . --jobs $(CONFORMANCE_JOBS) \
		--baseline-extra conformance/fluid18_baseline_extra.json --out $(CONFORMANCE_OUT) $(if $(ONLY),--only $(ONLY))
	$(VPY) conformance/report.py $(CONFORMANCE_OUT)/results.json --baseline $(CONFORMANCE)/fluid18_baseline.json \
		--baseline-extra conformance/fluid18_baseline_extra.json --out docs/conformance.md

clean:
	rm -rf $(VENV) build *.egg-info
