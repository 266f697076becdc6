"""Answer correctness on gold that needs no judge: the answer's `verdict` against Evidence
Inference's label (significantly increased / decreased / no significant difference) and against
PubMedQA's yes / no / maybe (the bottom line's closed answer, uncertain read as maybe; for a
question the bottom line does not read as closed, the verdict mapped by `as_yes_no`). Each PubMedQA
question is answered by a closed-question reader that was not trained on it (`readers`: the
cross-validation fold models). Accuracy and
macro-F1 over the gold classes, per strategy, beside the majority class (the most frequent label
of the Evidence Inference *train* split; PubMedQA here has no train split, so the majority of the
evaluated questions' own labels, an optimistic constant) in the same run. R@10 of the cited
windows is reported on the same questions. Beside an Evidence Inference accuracy,
`bottom_line_accuracy`: how often the bottom line's answer (what `ebm ask` states first; it may say
insufficient evidence, or follow the sources that name the question's arms, where the verdict of the
core statements says otherwise) equals the label."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from ebm_platform.intervals import interval, paired_difference
from ebm_platform.retrieval.ask import answer_with
from ebm_platform.retrieval.bottom_line import NO, UNCERTAIN, YES
from ebm_platform.retrieval.closed_answer import MAYBE, ClosedAnswerModel
from ebm_platform.retrieval.pipeline import Retriever
from ebm_platform.retrieval.verdict import as_yes_no


def scores(gold: list[str], predicted: list[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over the gold label set (a predicted class outside it counts as wrong)."""
    labels = sorted(set(gold))
    return {
        "accuracy": round(float(accuracy_score(gold, predicted)), 4),
        "macro_f1": round(float(f1_score(gold, predicted, labels=labels, average="macro", zero_division=0)), 4),
    }


def confusion(gold: list[str], predicted: list[str]) -> dict[str, dict[str, int]]:
    """gold label -> predicted label -> count."""
    table: dict[str, Counter] = {g: Counter() for g in sorted(set(gold))}
    for g, p in zip(gold, predicted):
        table[g][p] += 1
    return {g: dict(sorted(c.items())) for g, c in table.items()}


def majority(train_labels: list[str], gold: list[str]) -> dict:
    """The constant answer `the most frequent training label` on the evaluated questions."""
    label = Counter(train_labels).most_common(1)[0][0]
    return {"answer": label, **scores(gold, [label] * len(gold)), "questions": len(gold)}


def yes_no_maybe(answer: dict) -> str:
    """PubMedQA's label from an answer: its bottom line's closed answer (uncertain -> maybe), else
    its verdict mapped by `as_yes_no`."""
    closed = answer.get("bottom_line", {}).get("answer")
    if closed in (YES, NO, UNCERTAIN):
        return MAYBE if closed == UNCERTAIN else closed
    return as_yes_no(answer["verdict"])


def evaluate_answers(
    retriever: Retriever,
    items: list[dict],
    strategies: list[str],
    yes_no: bool = False,
    k: int = 10,
    progress: Callable[[str], None] | None = None,
    readers: dict[str, ClosedAnswerModel] | None = None,
) -> tuple[dict[str, dict], list[dict]]:
    """Per strategy: accuracy (with a question bootstrap 95% interval), macro-F1, the verdicts'
    spread and R@k of the cited windows; every strategy after the first is paired with the first
    (its accuracy minus this one's over the same questions, with the interval and wins/ties/losses).
    `readers` (item id -> closed-question reader) replaces the lake's reader question by question.
    Also returns one record per question: each strategy's answer, its bottom line, the rank of its
    first cited gold window and the core statements it read."""
    gold = [item["label"] for item in items]
    records = [{"id": item["id"], "question": item["question"], "gold": item["label"]} for item in items]
    results: dict[str, dict] = {}
    correct: dict[str, np.ndarray] = {}
    first = strategies[0] if strategies else None
    for strategy in strategies:
        predicted, recall = [], 0.0
        started = time.perf_counter()
        for n, item in enumerate(items, 1):
            if readers is not None:
                retriever.closed_model = readers[item["id"]]
            answer = answer_with(retriever, item["question"], None, strategy)
            predicted.append(yes_no_maybe(answer) if yes_no else answer["verdict"])
            cited = [c["window_id"] for c in answer["citations"]][:k]
            recall += len(item["gold"] & set(cited)) / len(item["gold"])
            records[n - 1][strategy] = {
                "answer": predicted[-1],
                "bottom_line": answer.get("bottom_line", {}).get("summary"),
                "bottom_line_answer": answer.get("bottom_line", {}).get("answer"),
                "gold_window_rank": next((r for r, w in enumerate(cited, 1) if w in item["gold"]), None),
                "core": [c["statement"] for c in answer.get("core_answer", [])],
            }
            if progress and n % 50 == 0:
                progress(f"{strategy}: {n}/{len(items)} answers")
        correct[strategy] = np.array([p == g for p, g in zip(predicted, gold)], dtype=float)
        lines = np.array([r[strategy]["bottom_line_answer"] == g for r, g in zip(records, gold)], dtype=float)
        paired = (
            {}
            if strategy == first
            else {f"{first}_minus_this_accuracy": paired_difference(correct[first], correct[strategy], digits=4)}
        )
        results[strategy] = {
            **scores(gold, predicted),
            **({"confusion": confusion(gold, predicted)} if yes_no else {}),
            "accuracy_interval_95": [round(v, 4) for v in interval(correct[strategy])],
            **({} if yes_no else {"bottom_line_accuracy": round(float(lines.mean()), 4) if len(lines) else 0.0}),
            **paired,
            f"R@{k}": round(recall / max(len(items), 1), 4),
            "verdicts": dict(Counter(predicted).most_common()),
            "questions": len(items),
            "seconds_per_question": round((time.perf_counter() - started) / max(len(items), 1), 3),
            "mode": answer["mode"] if items else None,
            "sentence_selection": answer.get("sentence_selection") if items else None,
        }
    return results, records
