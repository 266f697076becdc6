"""Whole builds, as the last runs recorded them (they take minutes, so `make bench` reads their
records rather than re-running them): `make demo` (data_lake/reports/demo_timing.json) and every
evaluation lake (its COMPLETE.json), with when they finished and on how many cores; then each
build step's peak resident memory (reports/build_memory.json) beside the lake's window count."""

from __future__ import annotations

import json
from pathlib import Path

from ebm_platform.lake_layout import LakeLayout
from ebm_platform.settings import get_settings

GOALS = {"demo": 8 * 60, "evidence-inference": 15 * 60}  # the issues' budgets
MEMORY_GOAL_MB = 4096  # docs/scaling.md: a step's peak under 4 GB on the 47,078-window lake


def windows_in(lake: Path) -> int:
    """Evidence windows in a lake (rows of its evidence_windows partitions)."""
    import polars as pl

    files = LakeLayout(lake).asset_partitions("evidence_windows")
    return sum(pl.scan_parquet(f).select(pl.len()).collect().item() for f in files)


def memory(lake: Path) -> None:
    """One line per build step, largest peak first, from the lake's build_memory.json."""
    path = LakeLayout(lake).build_memory
    if not path.is_file():
        return
    record = json.loads(path.read_text())
    print(f"\n{lake}: {windows_in(lake)} windows; peak resident memory per build step ({record['finished']})")
    for name, step in sorted(record["steps"].items(), key=lambda item: -item[1]["peak_rss_mb"]):
        flag = "" if step["peak_rss_mb"] < MEMORY_GOAL_MB else f"  (goal < {MEMORY_GOAL_MB} MiB)"
        print(f"  {name:<28} {step['peak_rss_mb']:8.0f} MiB  (run: {step['run']}){flag}")


def run() -> None:
    lake = get_settings().lake
    records = []
    demo = lake / "reports" / "demo_timing.json"
    if demo.is_file():
        records.append(("make demo, empty lake", "demo", json.loads(demo.read_text())))
    for marker in sorted(LakeLayout(lake).eval_lakes.glob("*/COMPLETE.json")):
        data = json.loads(marker.read_text())
        scope = (
            "resumed"
            if data.get("resumed")
            else "rebuilt, stored encodings reused"
            if data.get("encodings_reused")
            else "from empty"
        )
        records.append((f"evaluation lake {marker.parent.name} ({scope})", data["benchmark"], data))
    if not records:
        print("no recorded builds yet: run `make demo` and `ebm eval retrieval ...`")
    for name, kind, data in records:
        goal = GOALS.get(kind)
        print(
            f"{name:<58} {data['seconds'] / 60:6.1f} min  finished {data.get('finished', '?')} on "
            f"{data.get('cores', '?')} cores" + (f"  (goal <= {goal // 60} min)" if goal else "")
        )
    for lake_dir in [lake, *sorted(p for p in LakeLayout(lake).eval_lakes.glob("*") if p.is_dir())]:
        memory(lake_dir)
