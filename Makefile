# dlsysbench: `make reproduce` (set up, run the quick profile, render the report)
# and `make test` (set up, run the tests). Each target sets itself up; a second run
# reuses .venv and installs nothing unless pyproject.toml changed. The targets that only
# read stored results or describe the machine (report, compare, noise, doctor) make the
# .venv but install no system package (fio): doctor reports a missing fio instead.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.dlsysbench-installed
PROFILE ?= $(or $(DLSYSBENCH_PROFILE),quick)
# The targets' arguments (MACHINE=, BASE=, ...) count only on make's command line: an
# exported variable of the same name (MACHINE is set by some build environments) is ignored.
ARGS    := MACHINE MACHINES BASE HEAD THRESHOLD LEAVE_OUT BENCH
$(foreach v,$(ARGS),$(if $(filter environment%,$(origin $(v))),$(eval override $(v) :=)))
# $(call quote,X): X as one shell word, whatever it holds (a ' inside becomes '\'')
quote = '$(subst ','\'',$(1))'

.PHONY: setup fio test reproduce bench report compare noise doctor lock-sizes clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

fio:
	@sh scripts/ensure_fio.sh

setup: $(STAMP) fio

test: setup
	DLSYSBENCH_PROFILE=smoke $(PY) -m pytest -q

reproduce: setup
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) scripts/run_suite.py

# make bench [BENCH=<regex>]: the benchmarks (those asv --bench matches), filed as make reproduce files them
bench: setup
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) scripts/run_suite.py --no-report $(if $(BENCH),--bench $(call quote,$(BENCH)))

# make report [MACHINE=<name>] [MACHINES="a b"]: one machine's report, or several side by side
report: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) scripts/render_report.py $(if $(MACHINE),--machine $(call quote,$(MACHINE)) )$(if $(MACHINES),--machines $(foreach m,$(MACHINES),$(call quote,$(m))))

# make compare [BASE=<commit>] [HEAD=<commit>] [MACHINE=<name>] [THRESHOLD=5%]: fails on a regression
# (make prints Error 1; Error 2 when it cannot compare; scripts/compare.py exits 1 or 2 itself)
compare: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) scripts/compare.py $(if $(BASE),--base $(call quote,$(BASE))) $(if $(HEAD),--head $(call quote,$(HEAD))) $(if $(MACHINE),--machine $(call quote,$(MACHINE))) $(if $(THRESHOLD),--default-threshold=$(call quote,$(THRESHOLD)))

# make noise [MACHINE=<name>] [LEAVE_OUT=<run>]: thresholds from two or more stored runs of one commit
noise: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) scripts/measure_noise.py $(if $(MACHINE),--machine $(call quote,$(MACHINE))) $(foreach r,$(LEAVE_OUT),--leave-out $(call quote,$(r)))

doctor: $(STAMP)
	DLSYSBENCH_PROFILE=$(call quote,$(PROFILE)) $(PY) -m impls.harness.fingerprint

# make lock-sizes: record impls/profiles.toml's tables in benchmarks/sizes_lock.json, after bumping
# in benchmarks/versions.json the pins of the benchmarks whose measure an edited table changed
lock-sizes: $(STAMP)
	$(PY) scripts/lock_profile_sizes.py --write

clean:
	rm -rf reports/out .asv/results .asv/artifacts
