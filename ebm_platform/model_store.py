"""Trained scikit-learn models on disk without pickle: skops' format, whose loader builds only the
types it trusts by default (scikit-learn, NumPy, SciPy) and refuses a file that holds anything else,
so whoever can write to the lake cannot run code in its readers. The model's meta is stored as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from ebm_platform.atomic import write_bytes_atomic


def save_estimators(path: Path, estimators: dict[str, object], meta: dict) -> None:
    """Write named fitted estimators (None entries are left out) and the meta, atomically."""
    import skops.io as sio

    kept = {name: estimator for name, estimator in estimators.items() if estimator is not None}
    write_bytes_atomic(Path(path), sio.dumps({"meta": json.dumps(meta), **kept}))


def load_estimators(path: Path) -> tuple[dict[str, object], dict] | None:
    """The estimators by name and the meta; None when there is no file. A file holding a type
    skops does not trust raises instead of loading."""
    import skops.io as sio

    path = Path(path)
    if not path.is_file():
        return None
    stored = sio.loads(path.read_bytes())
    return stored, json.loads(stored.pop("meta"))
