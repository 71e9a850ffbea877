"""Where the offline data mirror is named: config `data_mirror`, `fedrepro fetch --mirror` or the environment."""

from __future__ import annotations

import os
from pathlib import Path

MIRROR_ENV = "FEDREPRO_DATA_MIRROR"


def absolute_mirror_env() -> None:
    """Make $FEDREPRO_DATA_MIRROR absolute, against the current directory: where it was given (`FEDREPRO_DATA_MIRROR=
    ../shared/datasets make test`, as the README writes it). Called once at start-up (the workflow's common.smk, the tests), so
    that every job and every copied workflow that inherits it reads the same folder wherever it runs."""
    value = os.environ.get(MIRROR_ENV)
    if value:
        os.environ[MIRROR_ENV] = str(Path(value).expanduser().resolve())
