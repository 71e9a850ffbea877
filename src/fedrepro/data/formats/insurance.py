"""insurance.csv, the medical-cost data of Lantz, "Machine Learning with R"."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError

HEADER = ("age", "sex", "bmi", "children", "smoker", "region", "charges")
_SEX = {"male": 1, "female": 0}
_SMOKER = {"yes": 1, "no": 0}


def read_insurance(path: Path) -> dict[str, np.ndarray]:
    """One array per column; sex and smoker as 0/1, region as codes into region_names."""
    path = Path(path)
    columns: dict[str, list] = {name: [] for name in HEADER}
    # newline="" lets csv handle LF and CRLF copies alike.
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header = tuple(next(reader, ()))
        if header != HEADER:
            hint = (
                " (an older copy that names the target 'expenses' and rounds values)"
                if "expenses" in header
                else ""
            )
            raise DataError(f"{path}: header {','.join(header)!r}{hint}, expected {','.join(HEADER)!r}")
        for row in reader:
            if not row:
                continue
            try:
                age, sex, bmi, children, smoker, region, charges = row
                values = (
                    float(age),
                    _SEX[sex],
                    float(bmi),
                    float(children),
                    _SMOKER[smoker],
                    region,
                    float(charges),
                )
            except (KeyError, ValueError):
                raise DataError(
                    f"{path}, line {reader.line_num}: cannot parse row {','.join(row)!r}"
                ) from None
            for name, value in zip(HEADER, values, strict=True):
                columns[name].append(value)

    region_names = np.array(sorted(set(columns["region"])), dtype=str)
    return {
        "age": np.array(columns["age"], dtype=np.float64),
        "sex": np.array(columns["sex"], dtype=np.int8),
        "bmi": np.array(columns["bmi"], dtype=np.float64),
        "children": np.array(columns["children"], dtype=np.float64),
        "smoker": np.array(columns["smoker"], dtype=np.int8),
        "region": np.searchsorted(region_names, columns["region"]).astype(np.int8),
        "region_names": region_names,
        "charges": np.array(columns["charges"], dtype=np.float64),
    }
