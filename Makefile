# Two entry points for a fresh machine (see README): `make reproduce` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
# e.g. `make reproduce SCALE=paper`; empty = config/config.yaml (quick)
SCALE ?=
# every alternative reading is run and judged (docs/claims.md, "Robust or depends"); READINGS=primary skips them
READINGS ?= all
SNAKEMAKE_ARGS := --config readings=$(READINGS) $(if $(SCALE),scale=$(SCALE),)
# what DVC records after a reproduction
DVC_TRACKED := data/raw data/prepared results figures

.PHONY: install reproduce report record pull test test-fast lint clean study tune

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c requirements.lock -e '.[test]'
	touch $@

install: $(VENV)/.installed

reproduce: install
	$(BIN)/snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)
	$(MAKE) report record

report: install
	$(BIN)/snakemake --cores 1 --report report.html $(SNAKEMAKE_ARGS)

# DVC records the hashes of data and results; commit the *.dvc files, then `dvc push`.
record: install
	$(BIN)/dvc add --quiet $(DVC_TRACKED)

# In a fresh clone: fetch the recorded data and results, then give them Snakemake's order of
# modification times (DVC restores files with arbitrary ones), so nothing is rerun.
pull: install
	$(BIN)/dvc pull
	$(BIN)/snakemake --cores 1 --touch --quiet $(SNAKEMAKE_ARGS)

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not slow"

lint: install
	$(BIN)/snakemake --lint

clean:
	rm -rf results figures logs report.html .snakemake

# Which reduced-scale choice moves which claim: `make study STUDY=fedcluster_scale` (config/studies/).
STUDY ?= fedcluster_scale
study: install
	$(BIN)/fedrepro study $(STUDY)

# A step-size grid search by a paper's protocol: `make tune TUNING=tdcd_quick` (config/tuning/).
TUNING ?= tdcd_quick
tune: install
	$(BIN)/fedrepro tune $(TUNING)
