"""`ebm demo`, `ebm import`, `ebm backfill`, `ebm lake build`, `ebm quarantine`, `ebm models`, `ebm embedder`:
building a lake and the environment it needs."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ebm_platform.console import progress as _progress
from ebm_platform.console import say as _say
from ebm_platform.lake_files import join
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.runs import dagster_instance, run_all_partitions, run_evaluation, start_step_server


def cmd_import(args: argparse.Namespace) -> int:
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    root = Path(args.source) if args.source else settings.require_datasets_dir()
    report = import_dataset(args.dataset, root, settings.landing_dir, active_catalogue(), progress=_say)
    _say(json.dumps(report.as_dict(), indent=2) if args.json else report.table())
    return 0


# What the demo evaluates unless EBM_EVAL_* say otherwise: the five seed systems and the naive
# hybrid on two test questions per condition, and sr_rag and naive on every test question with gold
# windows (their paired comparison) (all 18 strategies on every test question take ~1.5 h
# on 2 cores; materialise evaluation_report from the UI or set EBM_EVAL_* for that).
DEMO_EVALUATION = {
    "EBM_EVAL_STRATEGIES": "sr_rag,naive,med_r2,meta_rag,claims,kg_refine",
    "EBM_EVAL_MAX_QUESTIONS": "2",
    "EBM_EVAL_FULL_STRATEGIES": "sr_rag,naive",
}


def cmd_demo(args: argparse.Namespace) -> int:
    from ebm_platform.atomic import write_text_atomic
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_all
    from ebm_platform.process import cores
    from ebm_platform.settings import get_settings

    for key, value in DEMO_EVALUATION.items():
        os.environ.setdefault(key, value)
    get_settings.cache_clear()
    settings = get_settings()
    started = time.perf_counter()
    if os.environ.get("DAGSTER_HOME"):  # runs go through the instance and its multiprocess executor
        start_step_server()
    if settings.datasets_dir and Path(settings.datasets_dir).is_dir():
        import_all(
            Path(settings.datasets_dir),
            settings.landing_dir,
            active_catalogue(),
            LakeLayout(settings.lake).reports,
            progress=_say,
        )
    else:
        _say("EBM_DATASETS_DIR not found: materialising only what is already in the landing folders")
    _say(
        f"materialising every asset for {len(active_catalogue().codes)} partitions (offline: "
        f"model={settings.llm_model}) ..."
    )
    run_all_partitions()
    run_evaluation()
    report = write_demo_report(settings.lake)
    _say(f"\n{report.read_text(encoding='utf-8')}")
    seconds = time.perf_counter() - started
    write_text_atomic(
        LakeLayout(settings.lake).reports / "demo_timing.json",
        json.dumps({"seconds": round(seconds, 1), "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": cores()}),
    )
    _say(f"demo finished in {seconds:.0f}s; report: {report}; open the UI with `make dev`")
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    from ebm_platform.definitions import conditions_partitions, defs
    from ebm_platform.defs.backfill import run_backfill
    from ebm_platform.settings import get_settings

    if not os.environ.get("DAGSTER_HOME"):
        raise SystemExit("ebm backfill submits to the DAGSTER_HOME instance: set DAGSTER_HOME (the Makefile sets it)")
    codes = args.codes.split(",") if args.codes else conditions_partitions.get_partition_keys()
    unknown = sorted(set(codes) - set(conditions_partitions.get_partition_keys()))
    if unknown:
        raise SystemExit(f"unknown partitions: {', '.join(unknown)}")
    _progress(f"submitting a backfill of {args.job} over {len(codes)} partitions to {os.environ['DAGSTER_HOME']} ...")
    outcome = run_backfill(
        dagster_instance(), defs, args.job, codes, LakeLayout(get_settings().lake).dagster / "daemon.log", _progress
    )
    result = {
        "backfill_id": outcome.backfill_id,
        "status": outcome.status,
        "runs": dict(outcome.runs),
        "failed_partitions": outcome.failed_partitions,
        "seconds": round(outcome.seconds, 1),
    }
    print(
        json.dumps(result)
        if args.json
        else f"backfill {outcome.backfill_id}: {outcome.status}, runs {dict(outcome.runs)}, "
        f"failed partitions {outcome.failed_partitions or 'none'}, {outcome.seconds:.0f}s"
    )
    return 1 if outcome.failed_partitions else 0


# the demo report's example answers: a comparison the demo's corpus holds no trial of, and a question a
# guideline and a systematic review answer
EXAMPLE_QUESTIONS = (
    "In adults with patellofemoral pain, does adding hip strengthening to knee exercise reduce pain "
    "more than knee exercise alone?",
    "Is exercise therapy effective for chronic low back pain?",
)


def _example_answer(question: str, lake: Path) -> list[str]:
    """One `ebm ask` answer as the demo report's markdown: bottom line, certainty, core, citations."""
    from ebm_platform.retrieval.answer import READ_IN_FULL, certainty_line
    from ebm_platform.retrieval.ask import ask
    from ebm_platform.retrieval.bottom_line import NEAREST_FINDINGS

    answer = ask(question, lake=lake)
    line = answer["bottom_line"]
    lines = [
        f"**Q:** {question}",
        "",
        f"_{answer['mode']}_",
        "",
        f"**Bottom line ({line['question_type']} question):** {line['summary']}",
        "",
        certainty_line(answer.get("certainty", {})),
        "",
    ]
    if line.get("unanswered"):
        lines += [f"_{NEAREST_FINDINGS[0].upper()}{NEAREST_FINDINGS[1:]}:_", ""]
    lines += [f"- {c['statement']} " + "".join(f"[{n}]" for n in c["citations"]) for c in answer["core_answer"]]
    return (
        lines
        + [""]
        + [
            f"[{c['n']}] {c['title']} (grade {c['grade']}, {c['condition']}"
            + (f"; {READ_IN_FULL}" if c.get("read_in_full") else "")
            + f") `{c['window_id']}`"
            for c in answer["citations"]
        ]
    )


def _tagger_line(lake: Path) -> str:
    """Which offline PICO extractor built the graph, with its validation figures."""
    from ebm_platform.pico.tagger import read_meta, tagger_path
    from ebm_platform.settings import get_settings

    meta = read_meta(tagger_path(lake))
    if get_settings().pico_extractor == "rules" or not meta.get("beats_rules"):
        return "PICO extraction: the offline rules (no usable learned tagger, or EBM_PICO_EXTRACTOR=rules)."
    report = meta["validation"]
    projection = report.get("evidence_inference", {})
    beside = (
        f"; on Evidence Inference validation's projected gold, over I and O, {projection['learned']['macro_f1']:.3f} "
        f"vs rules {projection['rules']['macro_f1']:.3f}"
        if projection
        else ""
    )
    return (
        f"PICO extraction: the learned tagger (token macro F1 over {', '.join(report.get('headline_classes', ['I', 'O']))} "
        f"on {report.get('split', 'Evidence Inference validation')} {report['learned']['macro_f1']:.3f}, rules "
        f"{report['rules']['macro_f1']:.3f}, same run{beside}) with the rules for everything else."
    )


def _reader_line(lake: Path) -> str:
    """Which reader answers closed questions, with its cross-validated figures beside its baselines."""
    from ebm_platform.retrieval.closed_answer import ClosedAnswerModel

    model = ClosedAnswerModel.load(LakeLayout(lake).model("closed_answer"))
    if model is None:
        return (
            "Closed questions: the verdict read against the question's direction (no promoted closed-question reader)."
        )
    report = model.meta["cross_validation"]
    figures = "; ".join(
        f"{name} {report[name]['accuracy']:.3f} / {report[name]['macro_f1']:.3f}"
        for name in ("learned", "verdict mapping", "majority class")
    )
    maybes = report["learned"].get("answers", {}).get("maybe", 0)
    weights = ", ".join(f"{label} x {weight:g}" for label, weight in model.weights.items()) or "none"
    return (
        f"Closed questions: the closed-question reader (PubMedQA, {report['questions']} questions, "
        f"{report['folds']}-fold cross-validated accuracy / macro-F1 with each question's own abstract: {figures}; "
        f"it answers maybe {maybes} times; class weights {weights})."
    )


def write_demo_report(lake: Path) -> Path:
    """The demo's report: corpus by condition, graph against the paper, one cited answer."""
    import polars as pl

    from ebm_platform.atomic import write_text_atomic
    from ebm_platform.graph.stats import graph_summary

    corpus = pl.read_csv(LakeLayout(lake).reports / "corpus_by_condition.csv")
    lines = [
        "# ebm-platform demo report",
        "",
        "## Corpus by condition",
        "",
        "| " + " | ".join(corpus.columns) + " |",
        "|" + "---|" * len(corpus.columns),
    ]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in corpus.iter_rows()]
    graph = graph_summary(LakeLayout(lake).graph_db)
    lines += [
        "",
        "## Knowledge graph (Kùzu)",
        "",
        f"{graph['entities']} entities, {graph['attributes']} attribute nodes, {graph['relations']} typed "
        f"relations, {graph['communities']} communities in the knowledge tree.",
        "",
        f"PICO-core share of entity + attribute nodes: {graph['pico_core_share']:.1%} "
        f"(paper: {graph['pico_core_share_paper']:.1%}).",
        "",
        f"PICO-core entity names: {graph['pico_core_names']['total']}, of which verb phrases "
        f"{graph['pico_core_names']['verb_phrases']} and lone abbreviations "
        f"{graph['pico_core_names']['lone_abbreviations']}.",
        "",
        _tagger_line(lake),
        "",
        _reader_line(lake),
        "",
        "| core type | here | paper |",
        "|---|---|---|",
    ]
    lines += [f"| {t} | {graph['core_mix'][t]:.1%} | {p:.1%} |" for t, p in graph["core_mix_paper"].items()]
    lines += ["", "## Example answers (`ebm ask`, offline)"]
    for question in EXAMPLE_QUESTIONS:
        lines += ["", *_example_answer(question, lake)]
    evaluation = LakeLayout(lake).reports / "evaluation.md"
    if evaluation.exists():
        lines += ["", evaluation.read_text(encoding="utf-8").replace("# ", "## ", 1).replace("\n## ", "\n### ")]
    betr_report = LakeLayout(lake).reports / "betr_report.md"
    if betr_report.exists():
        lines += ["", betr_report.read_text(encoding="utf-8").replace("# BETR", "## BETR", 1)]
    path = LakeLayout(lake).reports / "demo_report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def cmd_quarantine(args: argparse.Namespace) -> int:
    from ebm_platform.corpus.quarantine import connect_read_only, current_rows
    from ebm_platform.settings import get_settings

    settings = get_settings()
    if not settings.warehouse_path.exists():
        _say("no warehouse yet: nothing has been materialised")
        return 0
    with connect_read_only(settings.warehouse_path, settings.store_wait_s) as conn:
        rows = current_rows(conn, join(LakeLayout(settings.lake).asset_dir(), "source_documents"))
    for condition, file, reason in rows:
        _say(f"{condition:<7} {file}: {reason}")
    _say(f"{len(rows)} quarantined file(s)")
    return 0


def cmd_lake_build(args: argparse.Namespace) -> int:
    """Import one dataset into this lake (EBM_LAKE) and materialise its corpus, graph and index."""
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    ids = set(Path(args.ids).read_text(encoding="utf-8").split()) if args.ids else None
    report = import_dataset(
        args.dataset, settings.require_datasets_dir(), settings.landing_dir, active_catalogue(), ids=ids, progress=_say
    )
    _say(report.table())
    run_all_partitions(partition_job="corpus_index_job", global_job="graph_global_job", resume=args.resume)
    return 0


def cmd_embedder(args: argparse.Namespace) -> int:
    """Prepare the configured embedder (OpenVINO conversion, offline) and compare it with torch."""

    from ebm_platform.index.embeddings import get_encoder, load_embedder
    from ebm_platform.settings import get_settings

    settings = get_settings()
    started = time.perf_counter()
    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
    _say(f"embedder: {encoder.description}, ready in {time.perf_counter() - started:.1f}s")
    if args.check:
        texts = [
            "Hip and knee strengthening reduced pain more than knee exercise alone in patellofemoral pain.",
            "Eccentric loading for Achilles tendinopathy improved VISA-A scores at 12 weeks.",
            "No significant difference in disability was found between motor control and general exercise.",
        ]
        reference = load_embedder(settings.embedding_model).encode(texts, normalize_embeddings=True)
        cosine = (encoder.embed(texts) * reference).sum(axis=1)
        _say(f"cosine with sentence-transformers (torch): min {cosine.min():.5f}")
        if cosine.min() < 0.99:
            raise RuntimeError(
                f"{encoder.description} disagrees with torch (cosine {cosine.min():.4f}); "
                "set EBM_EMBEDDING_BACKEND=torch"
            )
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """Train (or find) the environment's PICO tagger, verdict model and closed-question reader before any
    lake needs them."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.settings import get_settings, training_limit
    from ebm_platform.trained_models import ensure_environment_models

    settings = get_settings()
    started = time.perf_counter()
    _say("the environment's models (trained once per environment, up to an hour on 2 cores; then reused) ...")

    def progress(message: str) -> None:
        _progress(f"  {message} ({time.perf_counter() - started:.0f} s)")

    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
    progress(f"encoder: {encoder.description} (converted and quantized once per environment, then reused)")
    for line in ensure_environment_models(settings.require_datasets_dir(), encoder, progress, training_limit()):
        _say(line)
    _say(f"models ready in {time.perf_counter() - started:.0f} s")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's commands to `ebm`'s parser."""
    from ebm_platform.corpus.importers import DATASETS

    demo = sub.add_parser("demo", help="import the datasets and materialise every asset for every partition")
    demo.set_defaults(func=cmd_demo)
    backfill = sub.add_parser(
        "backfill",
        help="submit a partition backfill to the instance (daemon, queue, "
        "multiprocess executor, pools) and wait for it",
    )
    backfill.add_argument(
        "--job", default="conditions_job", choices=["conditions_job", "corpus_index_job", "evaluation_job"]
    )
    backfill.add_argument("--codes", help="comma-separated partitions (default: all)")
    backfill.add_argument("--json", action="store_true")
    backfill.set_defaults(func=cmd_backfill)
    imp = sub.add_parser("import", help="write normalised landing files from a public dataset")
    imp.add_argument(
        "dataset",
        choices=list(DATASETS),
        help="cochrane: Cochrane reviews (grade B); guidelines: guideline files (grade A, or B for an overview)",
    )
    imp.add_argument("--from", dest="source", help="datasets folder (default EBM_DATASETS_DIR)")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=cmd_import)
    quarantine = sub.add_parser("quarantine", help="list quarantined files and their reasons")
    quarantine.set_defaults(func=cmd_quarantine)

    embedder = sub.add_parser("embedder", help="prepare the embedding backend (OpenVINO conversion, offline)")
    embedder.add_argument("--check", action="store_true", help="compare it with sentence-transformers on torch")
    embedder.set_defaults(func=cmd_embedder)

    models = sub.add_parser(
        "models", help="train (or find) the environment's PICO tagger, verdict model and closed-question reader"
    )
    models.set_defaults(func=cmd_models)

    lake = sub.add_parser("lake", help="lake maintenance").add_subparsers(dest="lake_command", required=True)
    build = lake.add_parser("build", help="import one dataset into EBM_LAKE and materialise corpus, graph and index")
    build.add_argument("dataset", choices=["evidence-inference", "pubmedqa"])
    build.add_argument("--ids", help="file of document ids (PMC ids / PubMed ids) to import instead of all")
    build.add_argument(
        "--resume",
        action="store_true",
        help="reuse the corpus and extraction outputs an interrupted build of this lake left",
    )
    build.set_defaults(func=cmd_lake_build)
