"""`ebm eval ...`: PICO, question parsing, retrieval, answers, paired comparison and constant tuning."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ebm_platform.cli.query import benchmark_tables
from ebm_platform.console import progress as _progress
from ebm_platform.console import say as _say
from ebm_platform.lake_files import is_file, read_parquet
from ebm_platform.lake_layout import LakeLayout

PHRASING_HELP = (
    "evidence-inference: ask each prompt in this phrasing (names: `ebm eval questions`; `arms-exchanged` "
    "names the comparator first and scores answers against the swapped label) instead of the template; "
    "the reranker still trains on the template"
)


def cmd_eval_pico(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.pico_eval import evaluate, previous_tagger, token_evaluation
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.pico.extractors import llm_extractor
    from ebm_platform.pico.tagger import read_meta, tagger_path
    from ebm_platform.settings import get_settings

    settings = get_settings()
    datasets = settings.require_datasets_dir()
    tokens = token_evaluation(
        datasets,
        tagger_path(settings.lake),
        get_encoder(settings.embedding_model, settings.embedding_backend),
        args.benchmark,
        args.limit,
        dict([llm_extractor(settings)]) if args.llm else None,
        previous_tagger(read_meta(tagger_path(settings.lake))),
        _progress,
    )
    result = {"token_level": tokens}
    if args.benchmark == "evidence-inference":
        result["span_overlap_rules"] = evaluate(datasets, "validation", args.limit, progress=_progress)
    if args.json:
        _say(json.dumps(result, indent=2))
        return 0
    _token_table(tokens)
    if "evidence_inference" in tokens:
        _say("")
        _token_table(tokens["evidence_inference"])
    if "span_overlap_rules" in result:
        spans = result["span_overlap_rules"]
        _say(f"\nSpan overlap of the rules' names with the prompts ({spans['prompts']} prompts):")
        _say(f"{'field':<14}{'precision':>10}{'recall':>8}{'F1':>7}{'F1>=0.5':>9}")
        for field, m in spans["fields"].items():
            _say(
                f"{field:<14}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['f1']:>7.3f}{m['match_rate_f1_ge_0.5']:>9.3f}"
            )
    return 0


def _token_table(tokens: dict) -> None:
    """One token-level report as a table: per extractor and class, then its headline macro F1."""
    headline = tokens["headline_classes"]
    proxy = [c for c in ("P", "I", "O") if c not in headline]
    _say(f"Token-level PICO on {tokens['split']}: {tokens['articles']} texts, {tokens['tokens']} words")
    _say(f"gold: {tokens['gold']}")
    _say(f"{'extractor':<20}{'class':>6}{'precision':>10}{'recall':>8}{'F1':>7}")
    names = ("learned", "learned_word_labels", "previous_tagger", "rules", *(k for k in tokens if k.startswith("llm:")))
    for name in (*(n for n in names if n in tokens), "majority_class"):
        for c, m in tokens[name]["classes"].items():
            mark = "*" if c in proxy else ""
            _say(f"{name:<20}{c + mark:>6}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['f1']:>7.3f}")
        bounds = tokens["macro_f1_interval_95"].get(name)
        ci = f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""
        note = f"; {', '.join(proxy)}* a proxy, not in the macro" if proxy else ""
        _say(f"{name:<20}{'macro':>6}{'':>18}{tokens[name]['macro_f1']:>7.3f}{ci}   ({', '.join(headline)}{note})")
    _say(
        "learned_word_labels: the tagger's head alone, without the entity selector; previous_tagger: the "
        "environment's tagger trained on the Evidence Inference projection (when it keeps one)"
    )
    low, high = tokens["macro_f1_interval_95"]["learned_minus_rules"]
    _say(
        f"learned minus rules, macro F1 {tokens['learned_minus_rules_macro_f1']:+.3f} [{low:+.3f}, {high:+.3f}]; "
        f"intervals: {tokens['interval']}"
    )


def cmd_eval_questions(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.question_eval import evaluate_questions
    from ebm_platform.settings import get_settings

    result = evaluate_questions(get_settings().require_datasets_dir(), args.split, args.limit, progress=_progress)
    if args.json:
        _say(json.dumps(result, indent=2))
        return 0
    _say(f"Question parsing on Evidence Inference {args.split} ({result['prompts']} prompts); {result['metric']}")
    _say(f"{'phrasing':<28}{'group':<13}{'I':>7}{'C':>7}{'O':>7}{'mean':>7}{'whole question':>16}")
    for name, m in result["phrasings"].items():
        p = m["parser"]
        _say(
            f"{name:<28}{m['group']:<13}{p['intervention']:>7.3f}{p['comparator']:>7.3f}{p['outcome']:>7.3f}"
            f"{p['mean']:>7.3f}{m['whole question']['mean']:>16.3f}"
        )
    for group, summary in result["summary"].items():
        parser, whole = summary["parser"], summary["whole question"]
        low, high = parser["interval_95"]
        _say(f"{group}: parser {parser['mean']:.3f} [{low:.3f}, {high:.3f}], whole question {whole['mean']:.3f}")
    return 0


def cmd_eval_findings(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.findings_eval import evaluate_findings
    from ebm_platform.settings import get_settings

    result = evaluate_findings(get_settings().require_datasets_dir(), args.split, args.articles, progress=_progress)
    table = [f"Findings rules on Evidence Inference {args.split} ({result['articles']} articles):"] + [
        f"  {kind} sentences: {result[f'{kind}_sentences']['n']}, read as findings "
        f"{result[f'{kind}_sentences']['read_as_findings']}"
        for kind in ("evidence", "other")
    ]
    _say(json.dumps(result, indent=2) if args.json else "\n".join(table))
    return 0


def shipped_reranker(retriever, lake: Path) -> dict:
    """Load the production lake's learned reranker (the one `ebm ask` ranks with) into `retriever`."""
    from ebm_platform.retrieval.learned import LearnedReranker, reranker_path

    model = LearnedReranker.load(reranker_path(lake))
    if model is None or not model.usable:
        raise ValueError(f"{lake} holds no learned reranker that passed its gate: run `make demo` first")
    retriever.reranker.learned = model
    return {**model.meta, "source": f"shipped: {reranker_path(lake)}"}


def _evaluation_setup(args: argparse.Namespace):
    """The lake (an evaluation lake, or the production lake for `generated`), its questions, a
    retriever with the lake's learned reranker, and the checked strategies."""
    from ebm_platform.conditions import load_catalogue
    from ebm_platform.evaluation.lakes import evaluation_lake
    from ebm_platform.evaluation.question_eval import template
    from ebm_platform.evaluation.retrieval_eval import ensure_reranker, questions
    from ebm_platform.llm.client import client_from_settings
    from ebm_platform.retrieval.pipeline import Retriever
    from ebm_platform.retrieval.strategies import strategy_list
    from ebm_platform.settings import DEFAULT_CATALOGUE, get_settings

    settings = get_settings()
    strategies = strategy_list(args.strategies)
    phrasing = getattr(args, "phrasing", None)
    if phrasing:  # checked before an evaluation lake is built
        if args.benchmark != "evidence-inference":
            raise ValueError("--phrasing applies to evidence-inference (its prompts name I, C and O)")
        template(phrasing)
    ids = None
    if args.benchmark == "generated":
        datasets, lake = None, Path(settings.lake)  # the platform's own benchmark, in the production lake
    else:
        datasets = settings.require_datasets_dir()
        if getattr(args, "corpus", "all") == "split":
            if args.benchmark != "evidence-inference":
                raise ValueError(
                    "--corpus split applies to evidence-inference (PubMedQA's corpus is its 500 abstracts)"
                )
            from ebm_platform.benchmark.evidence_inference import article_ids

            ids = article_ids(datasets, args.split)
        lake = evaluation_lake(args.benchmark, datasets, settings, rebuild=args.rebuild, progress=_progress, ids=ids)
    items, dropped = questions(args.benchmark, args.split, datasets, lake, phrasing)
    if args.limit:
        items = items[: args.limit]
    names = tuple(c.name.lower() for c in load_catalogue(DEFAULT_CATALOGUE).conditions)
    retriever = Retriever(
        lake,
        client_from_settings(),
        settings.embedding_model,
        settings.cross_encoder,
        names,
        embedding_backend=settings.embedding_backend,
    )
    if args.benchmark == "generated":
        reranker = (
            retriever.reranker.learned.meta
            if retriever.reranker.learned
            else {"source": "none: materialise reranker_model (make demo)"}
        )
    elif getattr(args, "reranker", "trained") == "shipped":
        reranker = shipped_reranker(retriever, Path(settings.lake))
    else:
        reranker = ensure_reranker(retriever, args.benchmark, datasets, args.train_questions, progress=_progress)
    _progress(
        f"{args.benchmark} {args.split}: {len(items)} questions kept"
        + (f"; dropped: {dict(dropped)}" if dropped else "; none dropped")
        + f"; corpus lake {lake}"
    )
    corpus = (
        "the platform lake's own corpus"
        if args.benchmark == "generated"
        else "every article of the dataset"
        if ids is None
        else f"the {len(ids)} {args.split} articles"
    )
    header = {
        "benchmark": args.benchmark,
        "split": args.split,
        "lake": str(lake),
        "corpus": corpus,
        "phrasing": phrasing or "the benchmark's template",
        "questions_kept": len(items),
        "dropped": dict(dropped),
        "corpus_windows": retriever.index.count(),
    }
    return retriever, items, strategies, reranker, header


def _reranker_summary(reranker: dict) -> dict:
    return {
        k: reranker.get(k)
        for k in ("source", "key", "trained_on", "rounds", "train_questions", "beats_hand_set", "validation", "gain")
        if k in reranker
    }


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.retrieval_eval import evaluate
    from ebm_platform.retrieval.strategies import retrieve

    retriever, items, strategies, reranker, header = _evaluation_setup(args)
    results, per_question = evaluate(
        retriever, items, strategies, args.k, progress=_progress, oracle_utility=args.oracle_utility
    )
    if args.oracle_utility and "med_r2" in results:
        results["med_r2 (oracle f_u)"] = results.pop("med_r2")
        per_question["med_r2 (oracle f_u)"] = per_question.pop("med_r2")
    notes = {}
    for name in strategies:
        probe = retrieve(retriever, items[0]["question"], name).notes if items else {}
        notes[name] = {k: v for k, v in probe.items() if k in ("fine_scorer", "betr")}
    summary = {
        **header,
        "k": args.k,
        "results": results,
        "notes": notes,
        "reranker": _reranker_summary(reranker),
        "per_question": per_question,
    }
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    _print_retrieval(results, args.k)
    if "validation" in reranker:
        _say("\nlearned reranker on the validation questions' candidates (same candidates for every row):")
        for name, m in reranker["validation"].items():
            recall = next(f"{k} {v:.3f}" for k, v in m.items() if k.startswith("R@"))
            _say(f"  {name:<34}{recall}  MRR {m['MRR']:.3f}")
    return 0


def _print_retrieval(results: dict[str, dict], k: int) -> None:
    """Strategy x metric with 95% intervals, then sr_rag minus each other strategy (paired)."""
    from ebm_platform.evaluation.retrieval_eval import metric_names

    names = metric_names(k)
    width = max(len(s) for s in results) + 2
    _say(
        f"{'strategy':<{width}}"
        + "".join(f"{n + ' [95% interval]':>25}" for n in names)
        + f"{'questions':>11}{'s/question':>12}"
    )
    for name, m in results.items():
        cells = "".join(f"{_with_interval(m[n], m['interval_95'][n]):>25}" for n in names)
        _say(f"{name:<{width}}{cells}{m['questions']:>11}{m['seconds_per_question']:>12.2f}")
    paired = {name: m["sr_rag_minus_this"] for name, m in results.items() if "sr_rag_minus_this" in m}
    if paired:
        _say(
            "\nsr_rag minus each strategy, same questions (paired bootstrap 95% interval; wins/ties/losses of sr_rag):"
        )
        _print_paired(paired, names)


def _with_interval(value: float, bounds: list[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _print_paired(paired: dict[str, dict], names: tuple[str, ...]) -> None:
    width = max(len(s) for s in paired) + 2
    for name, by_metric in paired.items():
        cells = "  ".join(
            f"{n} {d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] {d['wins']}/{d['ties']}/{d['losses']}"
            for n, d in ((n, by_metric[n]) for n in names)
        )
        _say(f"  {name:<{width}}{cells}  ({by_metric[names[0]]['n']} questions)")


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.retrieval_eval import metric_names, paired_against

    runs = []
    for path in (args.first, args.second):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if "per_question" not in data:
            raise SystemExit(f"{path} has no per-question values: write it with `ebm eval retrieval --json`")
        runs.append(data)
    first, second = runs
    if first["k"] != second["k"]:
        raise SystemExit(f"the two runs used different k ({first['k']} and {second['k']})")
    shared = [s for s in first["per_question"] if s in second["per_question"]]
    if not shared:
        raise SystemExit("the two runs have no strategy in common")
    paired = {s: paired_against(second["per_question"][s], first["per_question"][s], first["k"]) for s in shared}
    if args.json:
        _say(json.dumps({"first": args.first, "second": args.second, "second_minus_first": paired}, indent=2))
        return 0
    _say(
        f"second minus first, per strategy, on the questions both runs have (paired bootstrap 95% interval; "
        f"wins/ties/losses of the second):\n  first:  {args.first} ({first.get('lake')})\n  second: {args.second} "
        f"({second.get('lake')})"
    )
    _print_paired(paired, metric_names(first["k"]))
    return 0


def cmd_eval_tune(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.constant_tuning import TUNABLE, choose_constants, tuning_items

    tunable = TUNABLE[args.strategy]
    retriever, items, _, _, header = _evaluation_setup(args)
    items = tuning_items(items, args.questions)
    names = list(tunable.grid)
    _progress(
        f"choosing {args.strategy}'s {', '.join(names)} on {len(items)} train questions "
        f"({'x'.join(str(len(v)) for v in tunable.grid.values())} grid points) ..."
    )
    result = choose_constants(args.strategy, retriever, items, tunable.constants.from_settings(), progress=_progress)
    if args.json:
        _say(json.dumps({**header, "questions_kept": len(items), **result}, indent=2))
        return 0
    _say(f"{'':<12}" + "".join(f"{n:>12}" for n in names) + f"{'MRR':>8}{'R@10':>8}{'Hit@10':>8}")
    labelled = (
        [("chosen", result["chosen"])]
        + [(f"top {i}", row) for i, row in enumerate(result["top"][1:], 2)]
        + [("settings", result["baseline"]), ("worst", result["worst"])]
    )
    for label, row in labelled:
        _say(
            f"{label:<12}"
            + "".join(f"{row[n]:>12g}" for n in names)
            + f"{row['MRR']:>8.3f}{row['R@10']:>8.3f}{row['Hit@10']:>8.3f}"
        )
    prefix = f"EBM_{args.strategy.upper()}_"
    _say("\nto use the chosen values: " + " ".join(f"{prefix}{n.upper()}={result['chosen'][n]:g}" for n in names))
    return 0


def _answers_on_benchmark(args: argparse.Namespace) -> int:
    """The evaluation_report metrics over the production lake's benchmark split, summarised as
    evaluation_summary does (without writing anything)."""
    import polars as pl

    from ebm_platform.conditions import active_catalogue
    from ebm_platform.evaluation.report import (
        describe,
        evaluate,
        pick_questions,
        summarise,
        verdict_training_questions,
    )
    from ebm_platform.retrieval.ask import retriever_for
    from ebm_platform.retrieval.strategies import strategy_list
    from ebm_platform.settings import get_settings

    settings = get_settings()
    lake = Path(settings.lake)
    strategies = strategy_list(args.strategies or settings.eval_strategies)
    tables = benchmark_tables(lake)
    codes = [active_catalogue().canonical(args.condition)] if args.condition else sorted(tables)
    splits_path = LakeLayout(lake).asset("benchmark_splits")
    if not is_file(splits_path):
        raise FileNotFoundError(f"no benchmark_splits in {lake}: run `make demo` first")
    split = read_parquet(splits_path).filter(pl.col("split") == (args.split or "test")).select("question_id")
    limit = settings.eval_max_questions if args.max_questions is None else args.max_questions
    questions = pl.concat(
        [
            pick_questions(tables[c].join(split, on="question_id"), limit, settings.eval_seed)
            for c in codes
            if c in tables
        ],
        how="diagonal_relaxed",
    )
    _progress(
        f"answering {questions.height} {args.split or 'test'} questions of {len(codes)} condition(s) with "
        f"{len(strategies)} strategies ..."
    )
    retriever = retriever_for(str(lake))
    trained = verdict_training_questions(settings.require_datasets_dir())
    rows = evaluate(retriever, questions, strategies, retriever.client, _progress, trained)
    summary = summarise(rows, settings.eval_seed)
    if args.json:
        _say(
            json.dumps(
                {
                    "lake": str(lake),
                    "split": args.split or "test",
                    "strategies": strategies,
                    "questions": questions.height,
                    "summary": summary.long().to_dicts(),
                    "paired_vs_sr_rag": summary.paired.to_dicts(),
                },
                indent=2,
            )
        )
    else:
        _say(summary.markdown(describe(rows, codes)))
    return 0


def cmd_eval_answers(args: argparse.Namespace) -> int:
    from ebm_platform.atomic import write_text_atomic
    from ebm_platform.benchmark.evidence_inference import labelled_prompts
    from ebm_platform.evaluation.answers import evaluate_answers, majority
    from ebm_platform.settings import get_settings, training_limit
    from ebm_platform.trained_models import ensure_verdict_model

    if args.benchmark == "generated":
        return _answers_on_benchmark(args)
    args.split = args.split or "validation"
    args.strategies = args.strategies or "sr_rag,naive"
    retriever, items, strategies, reranker, header = _evaluation_setup(args)
    retriever.verdict_model = ensure_verdict_model(
        Path(header["lake"]), get_settings().require_datasets_dir(), retriever.encoder, _progress, training_limit()
    )
    if args.verdict_reads == "sentence":
        retriever.verdict_model.orientation = None  # the sentence read alone
    yes_no = args.benchmark == "pubmedqa"
    gold = [item["label"] for item in items]
    if yes_no:
        baseline = {**majority(gold, gold), "note": "majority of the evaluated questions' own labels (no train split)"}
    else:
        train = labelled_prompts(get_settings().require_datasets_dir(), "train")["label"].to_list()
        baseline = {**majority(train, gold), "note": "most frequent label of the train split"}
    readers, oracle = (
        _closed_readers(retriever.verdict_model) if yes_no else (None, _oracle_spans(retriever.verdict_model.meta))
    )
    results, records = evaluate_answers(
        retriever, items, strategies, yes_no=yes_no, progress=_progress, readers=readers
    )
    if args.per_question:
        write_text_atomic(Path(args.per_question), "".join(json.dumps(r) + "\n" for r in records))
        _progress(f"per-question answers: {args.per_question}")
    summary = {
        **header,
        "labels": dict(Counter(gold).most_common()),
        "majority_class": baseline,
        "results": results,
        "oracle_evidence": oracle,
        "verdict": (
            "the bottom line's closed answer (uncertain -> maybe), read by the closed-question reader of the "
            "cross-validation fold that holds the question out; a question the bottom line does not read as "
            "closed: the verdict mapped (effect -> yes, no significant difference -> no, else maybe)"
        )
        if yes_no
        else "the answer's verdict",
        "verdict_model": retriever.verdict_model.meta,
        "verdict_reads": args.verdict_reads,
        "reranker": _reranker_summary(reranker),
    }
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    width = max(len(s) for s in [*strategies, "majority class"]) + 2
    first = strategies[0]
    _say(
        f"{'strategy':<{width}}{'accuracy':>9} {'95% interval':<16}{'macro-F1':>9}{'R@10':>7}{'questions':>10}   "
        f"{first} minus this, accuracy [95%] (wins/ties/losses)"
    )
    _say(
        f"{'majority class':<{width}}{baseline['accuracy']:>9.3f} {'':<16}{baseline['macro_f1']:>9.3f}{'':>7}"
        f"{baseline['questions']:>10}   ({baseline['answer']})"
    )
    for name, m in results.items():
        low, high = m["accuracy_interval_95"]
        d = m.get(f"{first}_minus_this_accuracy")
        paired = (
            f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] ({d['wins']}/{d['ties']}/{d['losses']})"
            if d
            else ""
        )
        _say(
            f"{name:<{width}}{m['accuracy']:>9.3f} [{low:.3f}, {high:.3f}]{m['macro_f1']:>10.3f}{m['R@10']:>7.3f}"
            f"{m['questions']:>10}   {paired}"
        )
    for name, m in oracle.items():
        if isinstance(m, dict) and "accuracy" in m:
            _say(
                f"{'oracle: ' + name:<{width}}{m['accuracy']:>9.3f} {'':<16}{m['macro_f1']:>9.3f}   ({oracle['evidence']})"
            )
    if results:
        _say(f"sentences quoted by: {next(iter(results.values()))['sentence_selection']}")
        if yes_no:
            _say(f"{first} confusion (gold -> answered): {results[first]['confusion']}")
        else:
            lines = ", ".join(f"{name} {m['bottom_line_accuracy']:.3f}" for name, m in results.items())
            _say(f"the bottom line's answer (what `ebm ask` states first) equals the label: {lines}")
    return 0


def _oracle_spans(meta: dict) -> dict:
    """The verdict model on the gold evidence alone (Evidence Inference validation spans, each read
    with its prompt's arms, as asked and exchanged, and the sentence read alone)."""
    spans = meta.get("validation_spans", {})
    return {
        "evidence": "each annotated validation evidence span (with its prompt's arms where the row says so)",
        **{k: v for k, v in spans.items() if k != "majority class"},
    }


def _closed_readers(verdict_model) -> tuple[dict, dict]:
    """The ten fold readers by PubMedQA item id, and the cross-validated figures with each question's
    own abstract as the evidence (the oracle setting)."""
    from ebm_platform.evaluation.closed_training import (
        cross_validation,
        example_matrix,
        fold_models,
        pubmedqa_examples,
    )
    from ebm_platform.settings import get_settings

    examples = pubmedqa_examples(get_settings().require_datasets_dir())
    X = example_matrix(examples, verdict_model.pipeline)
    models = fold_models(examples, verdict_model.pipeline, X)
    readers = {f"pubmedqa-{pmid}": model for pmid, model in models.items()}
    report = cross_validation(examples, verdict_model, X, models)
    oracle = {
        "evidence": "each question's own abstract, cross-validated",
        "closed-question reader": report["learned"],
        "verdict mapping": report["verdict mapping"],
    }
    return readers, oracle


def _split_command(evaluation, name: str, help: str, count: tuple[str, str], func) -> None:
    """An `ebm eval` command over one Evidence Inference split: --split, a count option, --json."""
    parser = evaluation.add_parser(name, help=help)
    parser.add_argument("--split", default="validation", choices=["train", "validation"])
    parser.add_argument(count[0], type=int, help=count[1])
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=func)


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's commands to `ebm`'s parser."""
    evaluation = sub.add_parser("eval", help="evaluations").add_subparsers(dest="eval_command", required=True)
    pico = evaluation.add_parser(
        "pico", help="PICO extraction (learned tagger, rules, previous tagger, LLM) at token level"
    )
    pico.add_argument(
        "--benchmark",
        default="ebm-nlp",
        choices=["ebm-nlp", "evidence-inference"],
        help="ebm-nlp: the dev tenth of EBM-NLP's abstracts (P, I, O), with the Evidence Inference figure "
        "beside it; evidence-inference: its validation split, projected gold (I, O)",
    )
    pico.add_argument("--limit", type=int, help="at most this many abstracts / articles per split")
    pico.add_argument("--llm", action="store_true", help="also score the LLM extraction (EBM_LLM_MODEL)")
    pico.add_argument("--json", action="store_true")
    pico.set_defaults(func=cmd_eval_pico)
    _split_command(
        evaluation,
        "questions",
        "question parsing (I, C, O anchors) on Evidence Inference prompts put into clinicians' phrasings (a proxy)",
        ("--limit", "at most this many prompts"),
        cmd_eval_questions,
    )
    _split_command(
        evaluation,
        "findings",
        "the share of Evidence Inference's annotated evidence sentences (results) and of the other sentences "
        "that the findings rules read as findings",
        ("--articles", "a seeded sample of this many articles"),
        cmd_eval_findings,
    )
    retrieval = evaluation.add_parser("retrieval", help="R@k / Hit@k / MRR per strategy on a real benchmark")
    retrieval.add_argument(
        "--benchmark",
        required=True,
        choices=["evidence-inference", "pubmedqa", "generated"],
        help="generated = the platform's benchmark_qa in the production lake",
    )
    retrieval.add_argument("--split", default="validation")
    retrieval.add_argument(
        "--strategies",
        default="sr_rag,naive,bm25,dense,hybrid",
        help="comma-separated; also med_r2, meta_rag, claims, kg_refine, and the ablations "
        "sr_rag_<lever> (no_graph, no_hyde, one_pool, hand_set, no_betr, no_colbert, no_guideline_slot, no_review_slot) and "
        "kg_refine_<flag> (no_scorer, no_pruner, plain)",
    )
    retrieval.add_argument(
        "--train-questions",
        type=int,
        help="train-split questions the lake's learned reranker is trained on (seeded sample; default 600)",
    )
    retrieval.add_argument(
        "--reranker",
        choices=["trained", "shipped"],
        default="trained",
        help="trained: the evaluation lake's own reranker (Evidence Inference train questions); "
        "shipped: the production lake's (multi-source, what `ebm ask` ranks with)",
    )
    retrieval.add_argument("--k", type=int, default=10)
    retrieval.add_argument(
        "--oracle-utility",
        action="store_true",
        help="evaluation only: Med-R2's f_u from the gold answer (the verdict model's loss drop)",
    )
    retrieval.add_argument("--limit", type=int, help="evaluate at most this many questions")
    retrieval.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    retrieval.add_argument(
        "--corpus",
        choices=["all", "split"],
        default="all",
        help="all: every article of the dataset (default); split: only the split's own articles",
    )
    retrieval.add_argument("--json", action="store_true")
    retrieval.add_argument("--phrasing", help=PHRASING_HELP)
    retrieval.set_defaults(func=cmd_eval_retrieval)
    compare = evaluation.add_parser(
        "compare",
        help="two `eval retrieval --json` outputs (e.g. two builds), paired "
        "per question: second minus first with bootstrap 95%% intervals",
    )
    compare.add_argument("first")
    compare.add_argument("second")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_eval_compare)
    tune = evaluation.add_parser(
        "tune",
        help="choose a seed strategy's open constants on Evidence Inference train "
        "questions (those the lake's reranker trained on excluded)",
    )
    tune.add_argument("--strategy", required=True, choices=["meta_rag", "med_r2", "claims"])
    tune.add_argument("--questions", type=int, default=300, help="train questions to score each grid point on")
    tune.add_argument("--train-questions", type=int, help="as for `eval retrieval` (the lake's learned reranker)")
    tune.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    tune.add_argument("--json", action="store_true")
    tune.set_defaults(
        func=cmd_eval_tune, benchmark="evidence-inference", split="train", limit=None, corpus="all", strategies="sr_rag"
    )
    answers = evaluation.add_parser(
        "answers",
        help="answer metrics: the platform's benchmark (default; the evaluation_summary table) or answer "
        "correctness (verdict) against Evidence Inference / PubMedQA gold in an evaluation lake",
    )
    answers.add_argument("--benchmark", default="generated", choices=["generated", "evidence-inference", "pubmedqa"])
    answers.add_argument("--split", help="default: test for the platform's benchmark, validation otherwise")
    answers.add_argument(
        "--strategies", help="default: EBM_EVAL_STRATEGIES for the platform's benchmark (all), sr_rag,naive otherwise"
    )
    answers.add_argument("--condition", help="the platform's benchmark: one condition code")
    answers.add_argument(
        "--max-questions",
        type=int,
        help="the platform's benchmark: questions per condition (default EBM_EVAL_MAX_QUESTIONS; 0 all)",
    )
    answers.add_argument("--train-questions", type=int, help="as for `eval retrieval` (the lake's learned reranker)")
    answers.add_argument("--limit", type=int, help="evaluate at most this many questions")
    answers.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    answers.add_argument("--json", action="store_true")
    answers.add_argument("--phrasing", help=PHRASING_HELP)
    answers.add_argument(
        "--per-question",
        metavar="FILE",
        help="evidence-inference / pubmedqa: also write one JSON line per question (gold, each strategy's answer, "
        "the rank of its first cited gold window, the core statements it read)",
    )
    answers.add_argument(
        "--verdict-reads",
        choices=("question", "sentence"),
        default="question",
        help="the learned verdict reads each sentence with the question's arms (default) or alone (as before "
        "2026-11-28; for comparison)",
    )
    answers.set_defaults(func=cmd_eval_answers)
