"""Helpers shared by the benchmarks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def datasets_dir() -> Path:
    path = Path(os.environ.get("EBM_DATASETS_DIR", REPO.parent / "shared" / "datasets"))
    if not path.is_dir():
        raise SystemExit(f"datasets folder not found at {path}; set EBM_DATASETS_DIR")
    return path


def percentiles(samples_s: list[float]) -> str:
    ms = np.array(samples_s) * 1000
    return f"p50 {np.percentile(ms, 50):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms (n={len(ms)})"
