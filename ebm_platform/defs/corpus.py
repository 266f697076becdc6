"""Corpus assets: landing imports, source_documents[CODE], evidence_windows[CODE], corpus_report."""

import json
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from ebm_platform.atomic import exclusive_lock, write_text_atomic
from ebm_platform.corpus.chunking import EMBED_TOKENS, BlockGrouper, window_partition
from ebm_platform.corpus.importers import import_all
from ebm_platform.corpus.landing import PartitionLoad, read_partition
from ebm_platform.corpus.model import GRADES
from ebm_platform.corpus.quarantine import record as record_quarantine
from ebm_platform.defs.io import PARTITION_VERSION
from ebm_platform.defs.partitions import AFTER_DEPS, EAGER, conditions_partitions
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import EmbedderResource, LakeResource, LLMResource
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.landing_state import content_digest, scan_folder
from ebm_platform.settings import get_settings
from ebm_platform.versions import parquet_version

LANDING_DIGEST = "landing_digest"  # metadata key: the landing content a partition was built from

DOCUMENT_SCHEMA = {
    "doc_id": pl.String,
    "condition": pl.String,
    "conditions": pl.List(pl.String),
    "title": pl.String,
    "year": pl.Int64,
    "source": pl.String,
    "licence": pl.String,
    "grade": pl.String,
    "grade_basis": pl.String,
    "study_design": pl.String,
    "article_type": pl.String,
    "doi": pl.String,
    "text": pl.String,
    "path": pl.String,
    "n_chars": pl.Int64,
}
WINDOW_SCHEMA = {
    "window_id": pl.String,
    "doc_id": pl.String,
    "condition": pl.String,
    "ordinal": pl.Int64,
    "chunk": pl.Int64,
    "section": pl.String,
    "text": pl.String,
    "n_tokens": pl.Int64,
    "char_start": pl.Int64,
    "char_end": pl.Int64,
    "grade": pl.String,
    "title": pl.String,
    "year": pl.Int64,
    "source": pl.String,
}


def grade_mix(frame: pl.DataFrame) -> dict[str, int]:
    counts = Counter(frame["grade"].to_list()) if frame.height else Counter()
    return {g: counts.get(g, 0) for g in GRADES}


def preview(frame: pl.DataFrame, columns: list[str], rows: int = 5, width: int = 80) -> dg.MetadataValue:
    """A markdown table of the first rows, long strings cut to `width` characters."""
    if frame.height == 0:
        return dg.MetadataValue.md("_empty partition: no rows_")
    head = frame.select(columns).head(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in head.iter_rows():
        cells = [str(v).replace("|", "/").replace("\n", " ")[:width] for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return dg.MetadataValue.md("\n".join(lines))


REFRESH_CRON = "0 3 * * 1"  # the weekly corpus refresh: Mondays 03:00 UTC

landing_files = dg.AssetSpec(
    "landing_files",
    partitions_def=conditions_partitions,
    group_name="sources",
    kinds={"file"},
    description="The files in data_lake/landing/<CODE>/ (external: written by landing_imports or by hand). "
    "The landing sensor records an observation (files, bytes, content digest) whenever a "
    "folder changes, and requests source_documents for that partition.",
)


@dg.asset(group_name="sources", kinds={"python"}, automation_condition=dg.AutomationCondition.on_cron(REFRESH_CRON))
def landing_imports(context: dg.AssetExecutionContext, lake: LakeResource) -> dg.MaterializeResult:
    """Re-scan the public datasets (EBM_DATASETS_DIR) into normalised landing files, weekly
    (on_cron, Mondays 03:00 UTC) or when launched. The landing sensor then requests runs for
    exactly the partitions whose files changed."""
    reports = import_all(
        get_settings().require_datasets_dir(),
        lake.landing_dir,
        lake.catalogue(),
        lake.reports_dir,
        progress=context.log.info,
    )
    return dg.MaterializeResult(
        metadata={
            f"{name}_{key}": dg.MetadataValue.int(int(r[key]))
            for name, r in reports.items()
            for key in ("documents", "files_written", "untagged_documents")
        }
    )


def partition_frame(batches: Iterable[list[dict]], schema: dict, code: str) -> pl.DataFrame:
    """A partition's rows, handed over a batch at a time, as one frame (a chunk per batch) with their
    condition; the schema's empty frame when there are none."""
    frames = [pl.DataFrame([dict(r, condition=code) for r in rows], schema=schema) for rows in batches if rows]
    return pl.concat([pl.DataFrame(schema=schema), *frames], rechunk=False)


# No Dagster pool for a partitioned asset: two partition runs claiming one pool at once can leave a
# step pending with the slot free (Dagster 1.13's SQLite claim checks for a free slot, then queues,
# and a slot freed in between assigns no one: in a `make test` run a partition run's first step waited
# until the test gave up). The warehouse's one writer is the lock file's, taken for the commit alone.
@dg.asset(
    partitions_def=conditions_partitions,
    group_name="corpus",
    kinds={"polars", "duckdb"},
    deps=[landing_files],
)
def source_documents(
    context: dg.AssetExecutionContext, lake: LakeResource, warehouse: DuckDBResource
) -> dg.Output[pl.DataFrame]:
    """Parsed, graded (A-E) and condition-tagged documents of one landing folder.

    Bad files are quarantined with their reason (metadata and the warehouse `quarantine`
    table); every valid document of the partition still materialises."""
    code = context.partition_key
    digest = content_digest(scan_folder(lake.landing_dir / code))  # before reading: a later change re-runs
    load = PartitionLoad()
    batches = read_partition(lake.landing_dir / code, code, lake.catalogue(), load)
    # the parsed documents are never all held at once
    frame = partition_frame(([d.as_row() for d in batch] for batch in batches), DOCUMENT_SCHEMA, code)
    now = datetime.now(UTC).replace(tzinfo=None)
    current = parquet_version(LakeLayout(lake.path).asset("source_documents", code))
    # the parquet (this run's version) is written after this commit
    with exclusive_lock(LakeLayout(lake.path).warehouse_lock), warehouse.get_connection() as conn:
        record_quarantine(conn, code, load.quarantine, context.run_id, current, now)
    for q in load.quarantine:
        context.log.warning(f"quarantined {q.path}: {q.reason}")
    if frame.height == 0:
        context.log.info(f"{code}: no documents in {lake.landing_dir / code}; partition is empty")
    quarantine_md = "\n".join(f"- `{q.path}`: {q.reason}" for q in load.quarantine) or "none"
    return dg.Output(
        frame,
        metadata={
            "documents": dg.MetadataValue.int(frame.height),
            "files_seen": dg.MetadataValue.int(load.files_seen),
            "quarantined": dg.MetadataValue.int(len(load.quarantine)),
            "quarantine": dg.MetadataValue.md(quarantine_md),
            "grades": dg.MetadataValue.json(grade_mix(frame)),
            "empty": dg.MetadataValue.bool(frame.height == 0),
            LANDING_DIGEST: dg.MetadataValue.text(digest),
            "preview": preview(frame, ["doc_id", "grade", "year", "title", "source"]),
            PARTITION_VERSION: dg.MetadataValue.text(context.run_id),
        },
    )


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="corpus",
    kinds={"polars"},
    automation_condition=EAGER,
)
def evidence_windows(
    context: dg.AssetExecutionContext, source_documents: pl.DataFrame, embedder: EmbedderResource, llm: LLMResource
) -> dg.Output[pl.DataFrame]:
    """Heading split -> atomic blocks -> grouped chunks -> windows (<=320 tokens, overlap 64,
    <=3 windows per chunk). Grouping: LLM group ids when a model is configured, else
    embedding similarity of neighbouring blocks (offline)."""
    code = context.partition_key
    client = llm.client()
    grouper = BlockGrouper(
        embedder.window_params(), client, lambda texts: embedder.embed(texts, max_tokens=EMBED_TOKENS)
    )
    batches = window_partition(source_documents, grouper, reporter(context))
    frame = partition_frame(batches, WINDOW_SCHEMA, code).rechunk()
    tokens = frame["n_tokens"] if frame.height else pl.Series([], dtype=pl.Int64)
    edges = [0, 64, 128, 192, 256, 320, 10**9]
    histogram = {
        f"{lo}-{hi if hi < 10**9 else 'max'}": int(((tokens > lo) & (tokens <= hi)).sum())
        for lo, hi in zip(edges, edges[1:])
    }
    mode = "offline (embedding similarity of neighbouring blocks)" if client.offline else f"llm:{client.model}"
    return dg.Output(
        frame,
        metadata={
            "windows": dg.MetadataValue.int(frame.height),
            "documents": dg.MetadataValue.int(source_documents.height),
            "empty": dg.MetadataValue.bool(frame.height == 0),
            "grouping": dg.MetadataValue.text(mode),
            "llm_sections": dg.MetadataValue.int(grouper.llm_sections),
            "llm_fallback_sections": dg.MetadataValue.int(grouper.fallback_sections),
            "llm_usage": dg.MetadataValue.json(client.usage.as_metadata()),
            "grades": dg.MetadataValue.json(grade_mix(frame)),
            "token_histogram": dg.MetadataValue.json(histogram),
            "mean_tokens": dg.MetadataValue.float(float(tokens.mean()) if frame.height else 0.0),
            "max_tokens": dg.MetadataValue.int(int(tokens.max()) if frame.height else 0),
            "preview": preview(frame, ["window_id", "grade", "n_tokens", "section", "text"]),
        },
    )


@dg.asset(
    group_name="corpus",
    kinds={"polars"},
    automation_condition=AFTER_DEPS,
    ins={
        "documents": dg.AssetIn(
            "source_documents", partition_mapping=dg.AllPartitionMapping(), metadata={"columns": ["condition", "grade"]}
        ),
        "windows": dg.AssetIn(
            "evidence_windows", partition_mapping=dg.AllPartitionMapping(), metadata={"columns": ["condition"]}
        ),
    },
)
def corpus_report(
    context: dg.AssetExecutionContext, documents: pl.DataFrame, windows: pl.DataFrame, lake: LakeResource
) -> dg.Output[pl.DataFrame]:
    """Per condition: documents, windows, grade mix; plus untagged counts of the last import."""
    codes = lake.catalogue().codes
    rows = []
    for code in codes:
        docs = documents.filter(pl.col("condition") == code) if documents.height else documents
        wins = windows.filter(pl.col("condition") == code) if windows.height else windows
        rows.append(
            {
                "condition": code,
                "documents": docs.height,
                "windows": wins.height,
                **{f"grade_{g}": n for g, n in grade_mix(docs).items()},
            }
        )
    table = pl.DataFrame(rows)
    imports_path = lake.reports_dir / "imports.json"
    untagged = (
        {name: r["untagged_documents"] for name, r in json.loads(imports_path.read_text()).items()}
        if imports_path.exists()
        else {}
    )
    lake.reports_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(lake.reports_dir / "corpus_by_condition.csv", table.write_csv())
    return dg.Output(
        table,
        metadata={
            "documents": dg.MetadataValue.int(int(table["documents"].sum())),
            "windows": dg.MetadataValue.int(int(table["windows"].sum())),
            "empty_conditions": dg.MetadataValue.json([r["condition"] for r in rows if r["documents"] == 0]),
            "untagged_documents_by_dataset": dg.MetadataValue.json(untagged),
            "by_condition": preview(table, table.columns, rows=len(codes)),
        },
    )
