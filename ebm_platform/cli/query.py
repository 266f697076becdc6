"""`ebm ask`, `ebm graph`, `ebm pico tag`, `ebm benchmark`, `ebm betr show`: reading a built lake."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ebm_platform.console import progress as _progress
from ebm_platform.console import say as _say
from ebm_platform.lake_files import is_file, read_parquet, stem
from ebm_platform.lake_layout import LakeLayout


def _graph_path() -> Path:
    from ebm_platform.settings import get_settings

    return LakeLayout(get_settings().lake).graph_db


def cmd_graph_stats(args: argparse.Namespace) -> int:
    from ebm_platform.graph.build import PAPER_CORE_MIX, PAPER_CORE_SHARE
    from ebm_platform.graph.stats import graph_summary

    summary = graph_summary(_graph_path())
    core_mix = summary["core_mix"]
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    _say(
        f"entities {summary['entities']}, attributes {summary['attributes']}, relations {summary['relations']}, "
        f"communities {summary['communities']}"
    )
    _say(f"PICO-core share of entity+attribute nodes: {summary['pico_core_share']:.1%} (paper {PAPER_CORE_SHARE:.1%})")
    _say("core mix (here / paper): " + ", ".join(f"{t} {core_mix[t]:.1%}/{p:.1%}" for t, p in PAPER_CORE_MIX.items()))
    _say("nodes by type: " + ", ".join(f"{t} {n}" for t, n in summary["nodes_by_type"].items()))
    _say("relations by type: " + ", ".join(f"{t} {n}" for t, n in summary["relations_by_type"].items()))
    names = summary["pico_core_names"]
    _say(
        f"PICO-core entity names: {names['total']}, of which verb phrases {names['verb_phrases']}, "
        f"lone abbreviations {names['lone_abbreviations']}"
    )
    for code, c in summary["per_condition"].items():
        _say(f"  {code:<7} entities {c['entities']:>6}  PICO-core {c['pico_core']:>6}")
    return 0


def cmd_graph_query(args: argparse.Namespace) -> int:
    from ebm_platform.graph.store import GraphStore

    with GraphStore(_graph_path(), read_only=True) as store:
        try:
            frame = store.query(args.cypher)
        except RuntimeError as exc:
            raise ValueError(f"Cypher error: {exc}") from exc
    if args.json:
        _say(frame.write_json())
    else:
        import polars as pl

        with pl.Config(tbl_rows=args.limit, fmt_str_lengths=80, tbl_width_chars=200):
            _say(str(frame.head(args.limit)))
    return 0


def cmd_graph_load_edges(args: argparse.Namespace) -> int:
    from ebm_platform.graph.release import load_into_kuzu, read_edges

    started = time.perf_counter()
    counts = load_into_kuzu(read_edges(Path(args.file)), Path(args.db))
    counts["seconds"] = round(time.perf_counter() - started, 2)
    _say(
        json.dumps(counts)
        if args.json
        else f"loaded {counts['edges']} edges between {counts['nodes']} nodes into {args.db} in {counts['seconds']}s"
    )
    return 0


def _pico_extractor(choice: str):
    """(name, texts -> spans) of the chosen extractor; default: the lake's tagger when usable."""
    from ebm_platform.pico.extractors import llm_extractor, rule_entities
    from ebm_platform.pico.finetuned import load_tagger, usable_tagger
    from ebm_platform.pico.tagger import tagger_path
    from ebm_platform.settings import get_settings

    settings = get_settings()
    if choice in ("default", "learned"):
        folder = tagger_path(settings.lake)
        tagger = usable_tagger(folder) if choice == "default" else load_tagger(folder)
        if tagger is not None:
            from ebm_platform.index.embeddings import get_encoder
            from ebm_platform.pico.windows import tag_texts

            encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
            return "learned", lambda texts: tag_texts(tagger, texts, encoder)
        _progress(f"no usable PICO tagger at {folder} (materialise pico_tagger: make demo); the rules extract")
    if choice == "llm":
        try:
            name, one = llm_extractor(settings)
        except ValueError as exc:
            raise SystemExit(str(exc)) from exc
        return name, lambda texts: [one(t) for t in texts]
    return "rules", lambda texts: [rule_entities(t) for t in texts]


def cmd_pico_tag(args: argparse.Namespace) -> int:
    """JSON lines in ({"id", "text"}), JSON lines out ({"id", "extractor", "entities"}), in order."""
    name, extract = _pico_extractor(args.extractor)
    batch: list[dict] = []

    def flush() -> None:
        for doc, entities in zip(batch, extract([d["text"] for d in batch])):
            sys.stdout.write(
                json.dumps(
                    {
                        "id": doc["id"],
                        "extractor": name,
                        "entities": [{k: e[k] for k in ("type", "text", "start", "end")} for e in entities],
                    }
                )
                + "\n"
            )
        sys.stdout.flush()
        batch.clear()

    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or "id" not in doc:
                raise ValueError('expected an object with "id" and a string "text"')
        except ValueError as exc:
            raise SystemExit(f"line {n}: {exc}") from exc
        batch.append(doc)
        if len(batch) == 64:
            flush()
    flush()
    return 0


def _stance_note(item: dict) -> str:
    """' (contradicts the bottom line)' for a statement that does; nothing otherwise."""
    return " (contradicts the bottom line)" if item.get("stance") == "contradicts" else ""


def _print_answer(result: dict) -> None:
    """Human-readable rendering of an `ask` result."""
    from ebm_platform.retrieval.answer import READ_IN_FULL, certainty_line
    from ebm_platform.retrieval.bottom_line import NEAREST_FINDINGS

    line = result["bottom_line"]
    _say(f"Bottom line ({line['question_type']} question): {line['summary']}")
    certainty = result.get("certainty", {})
    if certainty:
        _say(certainty_line(certainty))
    _say(f"Q: {result['question']}  [strategy {result['strategy']}; {result['mode']}]")
    _say(result["ranking"])
    if result["notes"].get("scope"):
        _say(f"evidence from: {result['notes']['scope']}")
    if line.get("read_by"):
        _say(f"closed answer: {line['read_by']}")
    if result.get("message"):
        _say(result["message"])
    _say("\n1. Core answer" + (f" ({NEAREST_FINDINGS})" if line.get("unanswered") else ""))
    for item in result["core_answer"]:
        _say(f"   - {item['statement']} {''.join(f'[{n}]' for n in item['citations'])}{_stance_note(item)}")
    _say("\n2. Guideline and supporting evidence, by grade")
    for group in result["evidence_by_grade"]:
        _say(f"   Grade {group['grade']} ({group.get('label', '')})")
        for item in group["statements"]:
            _say(f"   - {item['statement']} {''.join(f'[{n}]' for n in item['citations'])}{_stance_note(item)}")
    comparison = result["pico_comparison"]
    source = comparison.get("evidence_pico_from")
    _say("\n3. PICO comparison" + (f" (the evidence's P/I/C/O: {source})" if source else ""))
    for field, value in comparison.get("fields", {}).items():
        asked = f"'{value['question']}'" + (f" ({value['from']})" if value.get("from") else "")
        if "closest_evidence" in value:
            detail = f"{asked} vs '{value['closest_evidence']}' [{value['citation']}] ({value['similarity']})"
        else:
            detail = asked if value.get("question") else ""
        _say(f"   {field:<13} {value['status']}" + (f": {detail}" if detail else ""))
    if comparison.get("summary"):
        _say(f"   {comparison['summary']}")
    for limitation in comparison.get("limitations", []):
        _say(f"   limitation: {limitation}")
    _say("\nCitations")
    for c in result["citations"]:
        year = f", {c['year']}" if c.get("year") else ""  # a Cochrane abstract states no year
        how = f"; {READ_IN_FULL}" if c.get("read_in_full") else ""
        _say(f"   [{c['n']}] {c['title']} (grade {c['grade']}, {c['condition']}{year}{how}) window {c['window_id']}")
    _say(f"\nnotes: {result['notes']}\ntimings (s): {result['timings_s']}")
    for row in result.get("explain", []):
        _say(f"   {row}")
    for key, value in result.get("explain_strategy", {}).items():
        _say(f"   {key}: {json.dumps(value, default=str)}")


def cmd_ask(args: argparse.Namespace) -> int:
    from ebm_platform.retrieval.ask import ask

    result = ask(args.question, args.condition, args.strategy, args.explain)
    if args.json:
        _say(json.dumps(result, indent=2, default=str))
    else:
        _print_answer(result)
    return 0


def benchmark_tables(lake: Path):
    files = LakeLayout(lake).asset_partitions("benchmark_qa")
    if not files:
        raise FileNotFoundError(f"no benchmark_qa in {lake}: run `make demo` (or materialise benchmark_qa) first")
    return {stem(f): read_parquet(f) for f in files}


def cmd_benchmark_stats(args: argparse.Namespace) -> int:
    """Questions per condition and source, gold coverage, and the check rules re-run on each partition."""
    import polars as pl

    from ebm_platform.benchmark.quality import quality_rules, structural_rules
    from ebm_platform.index.embeddings import embed
    from ebm_platform.settings import get_settings

    lake = get_settings().lake
    stats = {}
    for code, bench in benchmark_tables(lake).items():
        windows_path = LakeLayout(lake).asset("evidence_windows", code)
        windows = read_parquet(windows_path) if is_file(windows_path) else pl.DataFrame({"window_id": [], "text": []})
        rules = structural_rules(bench, set(windows["window_id"].to_list())) + quality_rules(
            bench, dict(zip(windows["window_id"].to_list(), windows["text"].to_list())), embed
        )
        stats[code] = {
            "questions": bench.height,
            "by_source": dict(sorted(bench.group_by("source").len().iter_rows())) if bench.height else {},
            "with_gold": bench.filter(pl.col("gold_window_ids").list.len() > 0).height,
            "checks": {r.name: {"passed": r.passed, "severity": r.severity, **r.metadata} for r in rules},
        }
    if args.json:
        _say(json.dumps(stats, indent=2, default=str))
        return 0
    _say(f"{'code':<8}{'questions':>10}{'gold':>6}  {'ERROR rules':<12}{'WARN rules failing':<40} sources")
    for code, s in stats.items():
        errors = [n for n, c in s["checks"].items() if c["severity"] == "ERROR" and not c["passed"]]
        warns = [n for n, c in s["checks"].items() if c["severity"] == "WARN" and not c["passed"]]
        _say(
            f"{code:<8}{s['questions']:>10}{s['with_gold']:>6}  {('FAIL ' + ','.join(errors)) if errors else 'pass':<12}"
            f"{','.join(warns) or '-':<40} {s['by_source']}"
        )
    total = sum(s["questions"] for s in stats.values())
    boiler = sum(s["checks"]["boilerplate_ground_truth"]["boilerplate_answers"] for s in stats.values())
    _say(f"total {total} questions; boilerplate ground truths (WARN): {boiler}")
    return 0


def cmd_benchmark_export_review(args: argparse.Namespace) -> int:
    import polars as pl

    from ebm_platform.benchmark.review import export_sheet, sheet_path, store_path
    from ebm_platform.settings import get_settings

    lake = get_settings().lake
    bench = pl.concat(list(benchmark_tables(lake).values()), how="diagonal_relaxed")
    path = Path(args.out) if args.out else sheet_path(lake)
    rows = export_sheet(lake, bench, path)
    _say(
        f"wrote {rows} questions to {path} (decisions so far are kept in {store_path(lake)}); set decision to "
        f"keep or discard and save the sheet as {sheet_path(lake)}: the next benchmark_qa materialisation records "
        f"and honours it"
    )
    return 0


def cmd_betr_show(args: argparse.Namespace) -> int:
    from ebm_platform.betr.model import BetrParameters, parameters_path
    from ebm_platform.settings import get_settings

    path = parameters_path(get_settings().lake)
    params = BetrParameters.load(path)
    if params is None:
        raise FileNotFoundError(f"no fitted BETR parameters at {path}: materialise betr_parameters (make demo)")
    data = {"a": params.a, "u": params.u, "tau": params.tau, "provenance": params.provenance, "path": str(path)}
    if args.json:
        _say(json.dumps(data, indent=2))
        return 0
    _say(
        f"BETR r(q,d) = a*s(q,d) + u(grade): a = {params.a:.4f}, "
        + ", ".join(f"u_{g} = {v:.4f}" for g, v in params.u.items())
        + f", tau = {params.tau}"
    )
    _say("provenance: " + ", ".join(f"{k} {v}" for k, v in params.provenance.items()))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's commands to `ebm`'s parser."""
    ask = sub.add_parser("ask", help="answer a clinical question with cited, grade-ordered evidence")
    ask.add_argument("question")
    ask.add_argument("--condition", help="restrict to one condition code (e.g. PFP)")
    ask.add_argument(
        "--strategy",
        default="sr_rag",
        help="sr_rag (default), its ablations sr_rag_<lever>, naive / bm25 / dense / hybrid, "
        "med_r2, meta_rag, claims, kg_refine (and kg_refine_no_scorer|no_pruner|plain)",
    )
    ask.add_argument("--json", action="store_true")
    ask.add_argument("--explain", action="store_true", help="show every candidate's channel ranks and scores")
    ask.set_defaults(func=cmd_ask)

    graph = sub.add_parser("graph", help="the Kùzu knowledge graph").add_subparsers(dest="graph_command", required=True)
    stats = graph.add_parser("stats", help="nodes, relations, attributes and PICO-core shares per condition")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=cmd_graph_stats)
    query = graph.add_parser("query", help="run a read-only Cypher query")
    query.add_argument("cypher")
    query.add_argument("--json", action="store_true")
    query.add_argument("--limit", type=int, default=50)
    query.set_defaults(func=cmd_graph_query)
    edges = graph.add_parser("load-edges", help="load an SR-RAG release edge list into a fresh Kùzu database")
    edges.add_argument("file")
    edges.add_argument("--db", required=True)
    edges.add_argument("--json", action="store_true")
    edges.set_defaults(func=cmd_graph_load_edges)

    pico_cmd = sub.add_parser("pico", help="PICO extraction").add_subparsers(dest="pico_command", required=True)
    tag = pico_cmd.add_parser("tag", help="tag JSON lines {id, text} from stdin with typed character spans")
    tag.add_argument("--jsonl", action="store_true", required=True, help="JSON lines in and out (the only format)")
    tag.add_argument(
        "--extractor",
        default="default",
        choices=["default", "learned", "rules", "llm"],
        help="default: the lake's learned tagger when it passed its check, else the rules",
    )
    tag.set_defaults(func=cmd_pico_tag)

    bench = sub.add_parser("benchmark", help="the benchmark QA set").add_subparsers(
        dest="benchmark_command", required=True
    )
    bstats = bench.add_parser("stats", help="questions per condition and source, gold coverage, check results")
    bstats.add_argument("--json", action="store_true")
    bstats.set_defaults(func=cmd_benchmark_stats)
    review = bench.add_parser("export-review", help="write the human-review sheet (stage 4)")
    review.add_argument("--out", help="sheet path (default <lake>/review/review_sheet.csv)")
    review.set_defaults(func=cmd_benchmark_export_review)

    betr_cmd = sub.add_parser("betr", help="BETR parameters").add_subparsers(dest="betr_command", required=True)
    show = betr_cmd.add_parser("show", help="the fitted parameters and their provenance")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_betr_show)
