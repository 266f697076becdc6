"""`ebm`: the command line of ebm-platform (demo, import, quarantine)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _say(message: str) -> None:
    print(message, flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    root = Path(args.source) if args.source else settings.require_datasets_dir()
    report = import_dataset(args.dataset, root, settings.landing_dir, active_catalogue(), progress=_say)
    _say(json.dumps(report.as_dict(), indent=2) if args.json else report.table())
    return 0


def _instance():
    """The DAGSTER_HOME instance when configured (runs show in the UI), else an ephemeral one."""
    from dagster import DagsterInstance

    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.ephemeral()


def run_all_partitions(codes: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Materialise every per-condition asset for each partition, then the global assets."""
    from ebm_platform.definitions import conditions_partitions, defs

    instance = _instance()
    job = defs.resolve_job_def("conditions_job")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    summary: dict[str, dict[str, float]] = {}
    keys = codes or conditions_partitions.get_partition_keys()
    for n, code in enumerate(keys, 1):
        started = time.perf_counter()
        result = job.execute_in_process(partition_key=code, instance=instance, run_config=quiet)
        if not result.success:
            raise RuntimeError(f"partition {code} failed; see the run in the Dagster UI")
        counts: dict[str, float] = {}
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            for label in ("documents", "windows", "quarantined"):
                if label in mat.metadata and mat.asset_key.path[-1] in ("source_documents", "evidence_windows"):
                    counts[f"{mat.asset_key.path[-1]}.{label}"] = mat.metadata[label].value
        summary[code] = counts
        _say(f"[{n:>2}/{len(keys)}] {code:<7} documents={counts.get('source_documents.documents', 0):>4} "
             f"quarantined={counts.get('source_documents.quarantined', 0):>2} "
             f"windows={counts.get('evidence_windows.windows', 0):>5}  ({time.perf_counter() - started:.1f}s)")
    result = defs.resolve_job_def("global_job").execute_in_process(instance=instance, run_config=quiet)
    if not result.success:
        raise RuntimeError("global assets failed; see the run in the Dagster UI")
    return summary


def cmd_demo(args: argparse.Namespace) -> int:
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import DATASETS, import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    started = time.perf_counter()
    if settings.datasets_dir and Path(settings.datasets_dir).is_dir():
        reports = {}
        for dataset in DATASETS:
            report = import_dataset(dataset, Path(settings.datasets_dir), settings.landing_dir, active_catalogue())
            _say(report.table())
            reports[dataset] = report.as_dict()
        reports_dir = settings.lake / "reports"
        reports_dir.mkdir(parents=True, exist_ok=True)
        (reports_dir / "imports.json").write_text(json.dumps(reports, indent=2), encoding="utf-8")
    else:
        _say("EBM_DATASETS_DIR not found: materialising only what is already in the landing folders")
    _say(f"materialising every asset for {len(active_catalogue().codes)} partitions (offline: "
         f"model={settings.llm_model}) ...")
    run_all_partitions()
    report = settings.lake / "reports" / "corpus_by_condition.csv"
    _say(f"\ncorpus by condition ({report}):\n{report.read_text(encoding='utf-8')}")
    _say(f"demo finished in {time.perf_counter() - started:.0f}s; open the UI with `make dev`")
    return 0


def cmd_quarantine(args: argparse.Namespace) -> int:
    import duckdb

    from ebm_platform.settings import get_settings

    path = get_settings().warehouse_path
    if not path.exists():
        _say("no warehouse yet: nothing has been materialised")
        return 0
    with duckdb.connect(str(path), read_only=True) as conn:
        rows = conn.execute("SELECT condition, path, reason FROM quarantine ORDER BY condition, path").fetchall()
    for condition, file, reason in rows:
        _say(f"{condition:<7} {file}: {reason}")
    _say(f"{len(rows)} quarantined file(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ebm", description="ebm-platform: evidence-based GraphRAG (SR-RAG)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="import the datasets and materialise every asset for every partition")
    demo.set_defaults(func=cmd_demo)
    imp = sub.add_parser("import", help="write normalised landing files from a public dataset")
    imp.add_argument("dataset", choices=["evidence-inference", "pubmedqa"])
    imp.add_argument("--from", dest="source", help="datasets folder (default EBM_DATASETS_DIR)")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=cmd_import)
    quarantine = sub.add_parser("quarantine", help="list quarantined files and their reasons")
    quarantine.set_defaults(func=cmd_quarantine)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"ebm: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
