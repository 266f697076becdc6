"""Child process of the reliability suite (`make reliability`).

python -m ebm_platform_tests.reliability_child materialise LAKE ASSET [BARRIER]
    materialise ASSET (partition PFP when partitioned) of the test lake LAKE; with BARRIER, kill
    this process with SIGKILL at that point inside the write (see BARRIERS).
python -m ebm_platform_tests.reliability_child read LAKE STOP_FILE QUESTION
    until STOP_FILE exists: open the lake afresh, ask QUESTION with two strategies, query the
    graph and retrieve a candidate pool; print one JSON line per outcome.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

PARTITION = "PFP"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _after(owner: object, name: str) -> None:
    """Kill the process right after owner.name returns."""
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        _die()
        return result

    setattr(owner, name, wrapped)


def _before(owner: object, name: str) -> None:
    """Kill the process when owner.name is called."""
    setattr(owner, name, lambda *args, **kwargs: _die())


def _before_rename_to(suffix: str) -> None:
    """Kill the process when a file ending in `suffix` is about to replace its target (atomic writes)."""
    original = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith(suffix):
            _die()
        return original(src, dst, *args, **kwargs)

    os.replace = replace


def _install(barrier: str) -> None:
    import ebm_platform.defs.corpus as corpus_defs
    from ebm_platform.graph.store import GraphStore
    from ebm_platform.index.window_index import WindowIndex

    barriers = {
        # knowledge_graph: the working copy holds the committed partition, not yet renamed over the store
        "graph-committed-in-copy": lambda: _after(GraphStore, "replace_partition"),
        # the store is replaced; the entity parquet is not written yet
        "graph-renamed-before-parquet": lambda: _after(GraphStore, "close"),
        # any asset: the parquet's temporary file is complete, the rename has not happened
        "parquet-before-rename": lambda: _before_rename_to(".parquet"),
        # source_documents: DuckDB quarantine committed, parquet not written
        "duckdb-committed": lambda: _after(corpus_defs, "record_quarantine"),
        # window_index: rows being staged / committed without the full-text index / before compaction
        "lance-staging": lambda: _after(WindowIndex, "_encoded_batch"),
        "lance-committed-before-fts": lambda: _before(WindowIndex, "rebuild_text_index"),
        "lance-before-compaction": lambda: _before(WindowIndex, "compact"),
        # betr_parameters: parameters.json's temporary file is complete, not renamed
        "betr-before-rename": lambda: _before_rename_to("parameters.json"),
    }
    barriers[barrier]()


def run(lake: Path, names: list[str]) -> bool:
    """Materialise `names` (partition PFP, or none for betr_parameters) of the test lake; inputs from its parquet."""
    import dagster as dg

    from ebm_platform.defs.betr import betr_parameters
    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.graph import knowledge_graph, pico_extractions
    from ebm_platform.defs.index import window_index
    from ebm_platform_tests.conftest import lake_resources

    if names == ["betr_parameters"]:
        assets, partition = [dg.SourceAsset("candidate_pools"), betr_parameters], None
    else:
        assets, partition = (
            [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index],
            PARTITION,
        )
    return dg.materialize(
        assets,
        selection=names,
        partition_key=partition,
        resources=lake_resources(lake),
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    ).success


def materialise(lake: Path, asset: str, barrier: str | None) -> int:
    if barrier:
        _install(barrier)
    print("materialising", flush=True)
    return 0 if run(lake, [asset]) else 1


def read(lake: Path, stop: Path, question: str) -> int:
    """Readers against a store being rewritten: every outcome is answered, busy (clear error) or a crash."""
    from ebm_platform.graph.store import GraphStore
    from ebm_platform.retrieval.ask import ask, retriever_for
    from ebm_platform.retrieval.strategies import retrieve
    from ebm_platform.versions import StoreBusyError

    strategies = ("sr_rag", "naive")
    n = 0
    while not stop.exists():
        retriever_for.cache_clear()  # open the stores afresh every round
        for kind in ("ask", "graph_query", "candidate_pool"):
            try:
                if kind == "ask":
                    answer = ask(question, strategy=strategies[n % 2], lake=lake)
                    n_cited = len(answer["citations"])
                    ok = (
                        bool(answer["core_answer"])
                        and n_cited > 0
                        and all(
                            1 <= i <= n_cited for statement in answer["core_answer"] for i in statement["citations"]
                        )
                    )
                    outcome = "answered" if ok else "partial answer"
                elif kind == "graph_query":
                    with GraphStore(lake / "stores" / "kuzu" / "graph.kz", read_only=True) as store:
                        windows = store.count("MATCH (w:Window) RETURN count(*)")
                    outcome = "answered" if windows > 0 else "partial answer"
                else:
                    retrieval = retrieve(retriever_for(str(lake)), question, "sr_rag")
                    outcome = "answered" if retrieval.candidates else "partial answer"
            except StoreBusyError:
                outcome = "busy (clear retry error)"
            except Exception as exc:  # counted, not raised: the suite reports every crash
                outcome = f"crash: {type(exc).__name__}: {str(exc)[:200]}"
            print(json.dumps({"kind": kind, "outcome": outcome, "t": time.time()}), flush=True)
        n += 1
    return 0


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a parent that ignores SIGTERM must not make us immortal
    if argv[0] == "materialise":
        return materialise(Path(argv[1]), argv[2], argv[3] if len(argv) > 3 else None)
    return read(Path(argv[1]), Path(argv[2]), argv[3])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
