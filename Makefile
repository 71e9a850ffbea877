# Two entry points for a fresh machine (see README): `make reproduce` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
# e.g. `make reproduce SCALE=paper`; default: `scale` of config/config.yaml. Each scale has its own tree,
# results/<scale>/ and figures/<scale>/, which record and pull take as one unit.
SCALE ?= $(shell sed -n 's/^scale: *//p' config/config.yaml)
# primary: the claims under the project's readings, within the 60-minute quick budget (docs/performance.md);
# READINGS=all also runs and judges every alternative reading (docs/claims_reference.md, "Robust or depends")
READINGS ?= primary
# fixed: each figure's seeds, one look; adaptive: a first look, then `fedrepro seed-plan` adds seeds to the claims
# open for want of them within max_seeds and the budget, and a second look (docs/claims_reference.md, "Two looks")
SEEDS ?= $(shell sed -n 's/^seed_plan: *//p' config/config.yaml)
# more settings, as `snakemake --config` takes them, flat per scale (config/README.md): CONFIG="max_seeds_quick=12"
CONFIG ?=
# RERUN_STALE=1: retrain the runs on disk that other code trained (run.json code_sha256; `fedrepro stale-runs`)
RERUN_STALE ?=
STALE = $(strip $(if $(RERUN_STALE),$(shell $(BIN)/fedrepro stale-runs --scale $(SCALE) 2>/dev/null)))
SNAKEMAKE_ARGS := --config readings=$(READINGS) scale=$(SCALE) seed_plan=$(SEEDS) $(CONFIG)
# what DVC records after a reproduction: the data (shared by the scales) and this scale's outputs
DVC_TRACKED := data/raw data/prepared results/$(SCALE) figures/$(SCALE)

.PHONY: install reproduce report record pull touch test test-fast lint clean variants

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c requirements.lock -e '.[test]'
	touch $@

install: $(VENV)/.installed

reproduce: install
	$(BIN)/snakemake --cores $(CORES) $(SNAKEMAKE_ARGS) $(if $(STALE),--forcerun $(STALE) -- all)
	$(if $(filter adaptive,$(SEEDS)),$(BIN)/fedrepro seed-plan --scale $(SCALE) $(if $(CONFIG),--config $(CONFIG)))
	$(if $(filter adaptive,$(SEEDS)),$(BIN)/snakemake --cores $(CORES) $(SNAKEMAKE_ARGS))
	$(MAKE) report record

# The papers that have results at this scale: a report names every file it shows, and a touch stamps every file
# of its targets, so a paper not run at this scale cannot be in either.
PRESENT = $(basename $(notdir $(wildcard results/$(SCALE)/claims/*.csv)))
NONE_PRESENT = { echo "no results at scale $(SCALE) (results/$(SCALE)/claims/ is empty)" >&2; exit 1; }

report: install
	@test -n "$(PRESENT)" || $(NONE_PRESENT)
	$(BIN)/snakemake --cores 1 --report results/$(SCALE)/report.html $(SNAKEMAKE_ARGS) -- $(PRESENT)

# DVC records the hashes of data and results; commit the *.dvc files, then `dvc push`.
record: install
	$(BIN)/dvc add --quiet $(DVC_TRACKED)

# The default DVC remote, when it is a folder (no scheme://), must exist: a missing one made `dvc pull` say "Everything
# is up to date", then "Checkout failed ... Is your cache up to date?", never naming the folder.
CHECK_REMOTE = remote=$$($(BIN)/dvc remote default 2>/dev/null) || remote=; \
	test -n "$$remote" || { echo "make pull: no default DVC remote; name one (\`dvc remote add -d NAME URL\`)" >&2; \
	exit 1; }; url=$$($(BIN)/dvc config "remote.$$remote.url"); case "$$url" in *://*) ;; *) test -d "$$url" || { \
	echo "make pull: the default DVC remote '$$remote' is $$url, which does not exist: push to it first (\`dvc push\`" \
	"where the results were recorded), or name another (\`dvc remote add -d NAME URL\`)" >&2; exit 1; };; esac

# In a fresh clone: fetch the recorded data and this scale's results, then give them Snakemake's order of
# modification times (DVC restores files with arbitrary ones), so nothing is rerun.
pull: install
	@$(CHECK_REMOTE)
	$(BIN)/dvc pull $(addsuffix .dvc,$(DVC_TRACKED))
	$(MAKE) --no-print-directory touch

# (a make of its own: PRESENT is read after the pull)
touch:
	@test -n "$(PRESENT)" || $(NONE_PRESENT)
	$(BIN)/snakemake --cores 1 --touch --quiet $(SNAKEMAKE_ARGS) -- $(PRESENT)

# The tests spread over one process per core (pytest-xdist), the slow end-to-end ones first (tests/conftest.py), each
# process taking over the others' waiting tests once it runs dry; TEST_WORKERS=0 runs them all in this one. At most 4:
# the end-to-end smoke run (2 cores) is the long pole past that, and each process holds up to 2 GB.
TEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist worksteal

test: install
	$(PYTEST)

test-fast: install
	$(PYTEST) -m "not slow"

# snakemake --lint, green but for its conda recommendation, which does not apply (tests/pipeline/test_lint.py)
lint: install
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/pipeline/test_lint.py

# The scales the configuration defines (config.schema.yaml `scale`). A target that deletes takes its scale only through
# CHECKED_SCALE: one of them, as one word, or make stops before any command (under `make -n` too). SCALE= would delete
# every scale's tree; SCALE=../.. the repository's parent.
KNOWN_SCALES := $(strip $(shell sed -n '/^  scale:/,/enum:/s/^ *enum: *\[\(.*\)\]/\1/p' workflow/schemas/config.schema.yaml | tr ',' ' '))
CHECKED_SCALE = $(or $(and $(filter 1,$(words $(SCALE))),$(filter $(KNOWN_SCALES),$(SCALE))),$(error SCALE='$(SCALE)' is \
	not a scale the configuration defines ($(KNOWN_SCALES): workflow/schemas/config.schema.yaml); nothing deleted))

# this scale's outputs only (`make clean SCALE=smoke`)
clean:
	rm -rf results/$(CHECKED_SCALE) figures/$(CHECKED_SCALE) logs/$(CHECKED_SCALE)

# Named variants of a scale's settings, trained and judged outside the pipeline (config/variants/): a scale study
# (`make variants NAME=fedcluster_scale`: which reduced-scale choice moves which claim) or a paper's tuning
# protocol (`make variants NAME=tdcd_quick`).
NAME ?= fedcluster_scale
variants: install
	$(BIN)/fedrepro variants $(NAME)
