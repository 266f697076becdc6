"""`ebm`: the command line of ebm-platform. Each module adds its commands: build (demo, import,
backfill, lake build, quarantine, models, embedder), query (ask, graph, pico tag, benchmark, betr)
and evaluate (eval ...); runs.py owns how jobs run."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ebm_platform.cli import build, evaluate, query  # noqa: E402 (the settings above come first)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ebm", description="ebm-platform: evidence-based GraphRAG (SR-RAG)")
    sub = parser.add_subparsers(dest="command", required=True)
    for commands in (build, query, evaluate):
        commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, FileExistsError, ValueError, RuntimeError) as exc:
        print(f"ebm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ebm: stopped (Ctrl-C); every write is atomic, so what finished is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
