"""Each build step's peak resident memory: recorded by the IO manager on every output (reset after
each, so the next step in the same process measures its own) and kept per lake for `make bench`."""

from __future__ import annotations

import json

import dagster as dg
import numpy as np
import polars as pl

from ebm_platform.defs.io import LakeParquetIOManager
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.runs import record_peaks, step_peaks


def test_each_step_records_its_own_peak_memory_and_the_lake_keeps_the_largest(tmp_path):
    @dg.asset
    def large() -> pl.DataFrame:
        block = np.ones(400 * 1024 * 1024 // 8)  # 400 MiB, touched, then freed before the output
        total = float(block.sum())
        del block
        return pl.DataFrame({"total": [total]})

    @dg.asset
    def small(large: pl.DataFrame) -> pl.DataFrame:
        return large.with_columns(pl.col("total") * 2)

    result = dg.materialize([large, small], resources={"io_manager": LakeParquetIOManager(root=str(tmp_path))})
    peaks = step_peaks(result)
    # in one process, one after another: the small step's peak does not carry the large one's
    assert peaks["large"] >= peaks["small"] + 300

    line = record_peaks(tmp_path, [("PFP", {"large": 10.0}), ("global", peaks)])
    record = json.loads(LakeLayout(tmp_path).build_memory.read_text())
    assert record["steps"]["large"] == {"peak_rss_mb": peaks["large"], "run": "global"}
    assert line.startswith("peak resident memory per build step") and line.index("large") < line.index("small")
