"""Run every benchmark module (`python -m benchmarks [name ...]`)."""

from __future__ import annotations

import importlib
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BENCHMARKS = [
    "bench_ingest",
    "bench_graph",
    "bench_pico",
    "bench_retrieval",
    "bench_fulltext",
    "bench_landing",
    "bench_builds",
    "bench_betr",
    "bench_grading",
    "bench_load",
]


def main(names: list[str]) -> int:
    for name in names or BENCHMARKS:
        started = time.perf_counter()
        print(f"\n=== {name} ===", flush=True)
        importlib.import_module(f"benchmarks.{name}").run()
        print(f"({name} took {time.perf_counter() - started:.1f}s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
