"""Named variants of a scale's settings, trained outside the pipeline and judged: a scale study's variants by the
paper's claims (study.py), a tuning's grid by a score, whose choice is frozen in the paper's configuration (tune.py).
An alternative reading is the third kind; the pipeline itself runs it (experiments/runtable.py)."""
