# dlsysbench: `make reproduce` (set up, run the quick profile, render the report)
# and `make test` (set up, run the tests). Each target sets itself up; a second run
# reuses .venv and installs nothing unless pyproject.toml changed. The targets that only
# read stored results or describe the machine (report, compare, noise, doctor) make the
# .venv but install no system package (fio): doctor reports a missing fio instead.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.dlsysbench-installed
# $(call arg,NAME): a target's argument (MACHINE=, BASE=, ...) as given on make's command
# line, else empty: an exported variable of that name (some build environments export
# MACHINE) picks nothing, and is passed on to the commands unchanged. Its value is taken as
# typed ($(value)): a '$' in a BENCH regex is an anchor, not one of make's variables.
arg = $(if $(filter command line,$(origin $(1))),$(value $(1)))
# The profile the commands run: PROFILE= on make's command line, else $DLSYSBENCH_PROFILE,
# else quick (an exported PROFILE is ignored, as for the other arguments).
dlsysbench_profile = $(or $(call arg,PROFILE),$(DLSYSBENCH_PROFILE),quick)
# $(call quote,X): X as one shell word, whatever it holds (a ' inside becomes '\'')
quote = '$(subst ','\'',$(1))'

.PHONY: setup fio test reproduce bench report compare noise doctor lock-sizes clean venv-check

# A .venv is reused as found: a wrong Python, one without pip, or a link to a Python that is
# gone is named (remove it) before anything installs; a new one is made only from a Python
# that meets requires-python.
# (checked on every make, also when .venv was set up before its Python went: order-only, it
# never makes the install run again)
venv-check:
	@if test -L $(PY) && ! test -e $(PY); then echo "make: $(PY) links to $$(readlink $(PY)), which is gone (its Python was removed or moved): remove $(VENV) (rm -rf $(VENV)) and run make again" >&2; exit 2; fi

$(STAMP): pyproject.toml | venv-check
	@test -x $(PY) || { $(PYTHON) scripts/check_python.py && $(PYTHON) -m venv $(VENV); } || exit 2
	@$(PY) scripts/check_python.py --venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

fio:
	@sh scripts/ensure_fio.sh

setup: $(STAMP) fio

# make test [TEST_WORKERS=<n>|auto]: the tests in parallel, by default one worker per usable CPU,
# at most 4 (tests/conftest.py); TEST_WORKERS=0 runs them in this one process. A test file's
# tests share one worker, so a module-scoped fixture is built once.
test: setup
	DLSYSBENCH_PROFILE=smoke $(PY) -m pytest -q -n $(call quote,$(or $(call arg,TEST_WORKERS),auto)) --dist loadfile

reproduce: setup
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) scripts/run_suite.py

# make bench [BENCH=<regex>]: the benchmarks (those asv --bench matches), filed as make reproduce files them
bench: setup
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) scripts/run_suite.py --no-report $(if $(call arg,BENCH),--bench $(call quote,$(call arg,BENCH)))

# make report [MACHINE=<name>] [MACHINES="a b"]: one machine's report, or several side by side
report: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) scripts/render_report.py $(if $(call arg,MACHINE),--machine $(call quote,$(call arg,MACHINE)) )$(if $(call arg,MACHINES),--machines $(foreach m,$(call arg,MACHINES),$(call quote,$(m))))

# make compare [BASE=<commit>] [HEAD=<commit>] [MACHINE=<name>] [THRESHOLD=5%]: fails on a regression
# (make prints Error 1; Error 2 when it cannot compare; scripts/compare.py exits 1 or 2 itself)
compare: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) scripts/compare.py $(if $(call arg,BASE),--base $(call quote,$(call arg,BASE))) $(if $(call arg,HEAD),--head $(call quote,$(call arg,HEAD))) $(if $(call arg,MACHINE),--machine $(call quote,$(call arg,MACHINE))) $(if $(call arg,THRESHOLD),--default-threshold=$(call quote,$(call arg,THRESHOLD)))

# make noise [MACHINE=<name>] [LEAVE_OUT=<run>] [REPLACE=1]: thresholds from two or more stored runs of one commit
noise: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) scripts/measure_noise.py $(if $(call arg,MACHINE),--machine $(call quote,$(call arg,MACHINE))) $(foreach r,$(call arg,LEAVE_OUT),--leave-out $(call quote,$(r)))$(if $(filter 1 yes true YES TRUE Yes True,$(call arg,REPLACE)), --replace)

doctor: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(dlsysbench_profile)) $(PY) -m impls.harness.fingerprint

# make lock-sizes: record impls/profiles.toml's tables in benchmarks/sizes_lock.json, after bumping
# in benchmarks/versions.json the pins of the benchmarks whose measure an edited table changed
lock-sizes: $(STAMP)
	$(PY) scripts/lock_profile_sizes.py --write

clean:
	rm -rf reports/out .asv/results .asv/artifacts
