"""One new document landed -> queryable, against a full build of the same partition in the same run.

A throw-away lake gets the demo lake's PFP landing folder (run `make demo` first) and is built
from empty through the assets a query reads (source_documents -> evidence_windows ->
pico_extractions -> knowledge_graph, window_index): the baseline. Then one real article that is
not in the partition (an Evidence Inference trial) lands as a new markdown file and the same assets
are materialised again: that is the time until `ask` can cite it. Also printed: the share of the
last recorded `make demo` (data_lake/reports/demo_timing.json)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import dagster as dg

from benchmarks.common import datasets_dir
from ebm_platform.corpus.landing import landing_markdown
from ebm_platform.corpus.readers import read_jats
from ebm_platform.defs.corpus import evidence_windows, source_documents
from ebm_platform.defs.graph import knowledge_graph, pico_extractions
from ebm_platform.defs.index import window_index
from ebm_platform.defs.resources import default_resources
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.settings import get_settings

CODE = "PFP"
ASSETS = [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index]


def _materialise(resources: dict) -> float:
    started = time.perf_counter()
    result = dg.materialize(
        ASSETS,
        partition_key=CODE,
        resources=resources,
        instance=dg.DagsterInstance.ephemeral(),
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    if not result.success:
        raise SystemExit("materialisation failed")
    return time.perf_counter() - started


def run() -> None:
    settings = get_settings()
    landing = settings.landing_dir / CODE
    if not landing.is_dir():
        raise SystemExit(f"no {landing}: run `make demo` first")
    present = " ".join(p.name for p in landing.iterdir())
    xml = next(
        p for p in sorted((datasets_dir() / "evidence_inference" / "xml").glob("PMC*.nxml")) if p.stem not in present
    )  # the first real trial report the partition does not hold
    document = read_jats(xml.read_bytes(), str(xml))
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        shutil.copytree(landing, lake / "landing" / CODE)
        get_settings.cache_clear()
        resources = default_resources()
        resources = {**resources, **_rebind(resources, lake)}
        documents = len(list((lake / "landing" / CODE).iterdir()))
        _materialise(resources)  # warm-up: model loads and first compilation are start-up, not build time
        shutil.rmtree(lake / "assets"), shutil.rmtree(lake / "stores")
        full = _materialise(resources)
        (lake / "landing" / CODE / f"new-{xml.stem}.md").write_text(landing_markdown(document), encoding="utf-8")
        incremental = _materialise(resources)
        index = WindowIndex(LakeLayout(lake).lancedb)
        new_rows = index.table().count_rows(f"doc_id = '{document.doc_id}'")
    print(f"partition {CODE}: {documents} documents; full build from empty {full:.1f} s (baseline)")
    print(
        f"one new document landed -> queryable: {incremental:.1f} s = {incremental / full:.0%} of the partition's "
        f"full build; {new_rows} of its windows in the index"
    )
    timing = settings.lake / "reports" / "demo_timing.json"
    if timing.is_file():
        demo = json.loads(timing.read_text())
        print(
            f"= {incremental / demo['seconds']:.1%} of the last recorded `make demo` ({demo['seconds']:.0f} s, "
            f"{demo['finished']}, {demo['cores']} cores)"
        )


def _rebind(resources: dict, lake: Path) -> dict:
    """The same resources pointed at the throw-away lake."""
    from dagster_duckdb import DuckDBResource

    from ebm_platform.defs.io import LakeParquetIOManager
    from ebm_platform.defs.resources import GraphResource, LakeResource

    return {
        "lake": LakeResource(root=str(lake), catalogue_path=resources["lake"].catalogue_path),
        "warehouse": DuckDBResource(database=str(LakeLayout(lake).warehouse)),
        "io_manager": LakeParquetIOManager(root=str(lake)),
        "graph": GraphResource(lake_root=str(lake), schema_name=resources["graph"].schema_name),
    }
