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


def _peaks_of_two_steps(tmp_path, allocate) -> dict[str, float]:
    """Step peaks of `large` (allocates with `allocate`, frees, outputs) then `small`, in one process."""

    @dg.asset
    def large() -> pl.DataFrame:
        return pl.DataFrame({"total": [allocate()]})

    @dg.asset
    def small(large: pl.DataFrame) -> pl.DataFrame:
        return large.with_columns(pl.col("total") * 2)

    result = dg.materialize([large, small], resources={"io_manager": LakeParquetIOManager(root=str(tmp_path))})
    return step_peaks(result)


def _one_block() -> float:
    block = np.ones(400 * 1024 * 1024 // 8)  # 400 MiB, touched, then freed before the output
    return float(block.sum())


def _scattered() -> float:
    blocks = [np.ones(1000) for _ in range(60_000)]  # about 480 MB in 8 KB pieces, on the C heap
    return float(sum(b[0] for b in blocks))


def test_each_step_records_its_own_peak_memory_and_the_lake_keeps_the_largest(tmp_path):
    peaks = _peaks_of_two_steps(tmp_path, _one_block)
    # in one process, one after another: the small step's peak does not carry the large one's
    assert peaks["large"] >= peaks["small"] + 300

    line = record_peaks(tmp_path, [("PFP", {"large": 10.0}), ("global", peaks)])
    record = json.loads(LakeLayout(tmp_path).build_memory.read_text())
    assert record["steps"]["large"] == {"peak_rss_mb": peaks["large"], "run": "global"}
    assert line.startswith("peak resident memory per build step") and line.index("large") < line.index("small")


def test_memory_a_step_freed_is_not_held_by_the_process_that_runs_the_next_one(tmp_path):
    """Many small arrays live on the C heap, which keeps freed pages resident: without handing them
    back after a step (process.release_free_memory), the next step in the same process would start
    from, and be measured at, the previous step's high-water mark."""
    peaks = _peaks_of_two_steps(tmp_path, _scattered)
    assert peaks["large"] >= peaks["small"] + 300


def test_an_input_that_names_its_columns_reads_only_those(tmp_path):
    """A global step that counts windows by condition (corpus_report) reads the condition column of
    every partition, not the windows' texts."""
    partitions = dg.StaticPartitionsDefinition(["ACL", "LBP"])

    @dg.asset(partitions_def=partitions)
    def windows(context) -> pl.DataFrame:
        return pl.DataFrame({"condition": [context.partition_key] * 2, "text": ["a long window text"] * 2})

    @dg.asset(
        ins={
            "condition_only": dg.AssetIn(
                "windows", partition_mapping=dg.AllPartitionMapping(), metadata={"columns": ["condition"]}
            )
        }
    )
    def counts(condition_only: pl.DataFrame) -> pl.DataFrame:
        return condition_only.group_by("condition").len().sort("condition")

    instance = dg.DagsterInstance.ephemeral()
    resources = {"io_manager": LakeParquetIOManager(root=str(tmp_path))}
    for key in partitions.get_partition_keys():
        dg.materialize([windows], partition_key=key, instance=instance, resources=resources)
    result = dg.materialize([windows, counts], selection=[counts], instance=instance, resources=resources)
    out = result.output_for_node("counts")
    assert out.columns == ["condition", "len"] and out["len"].to_list() == [2, 2]
    read = LakeParquetIOManager(root=str(tmp_path)).load_input(
        dg.build_input_context(
            asset_key=dg.AssetKey("windows"),
            definition_metadata={"columns": ["condition"]},
            asset_partitions_def=partitions,
            partition_key="ACL",
        )
    )
    assert read.columns == ["condition"]
