"""Named variants of a scale's settings, trained outside the pipeline and judged, in one shape (spec.py): a scale
study's variants by the paper's claims (study.py), a tuning's grid by a score, whose choice is frozen in the
paper's configuration (tune.py); `fedrepro variants NAME` runs either (run.py). An alternative reading is the same
patch declared with the paper; the pipeline itself runs it (experiments/runtable.py)."""
