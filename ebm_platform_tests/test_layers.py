"""The import rule of docs/architecture.md ("Layers"): no module imports from a floor above its own,
every module is on a floor, and only the Dagster wiring imports Dagster."""

from __future__ import annotations

import ast
import re

from ebm_platform_tests.conftest import REPO

PACKAGE = REPO / "ebm_platform"
DAGSTER_ALLOWED = {"defs", "definitions", "runs", "cli"}


def floors() -> dict[str, int]:
    """Unit (package or top-level module of ebm_platform) -> floor number, 0 the bottom."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no ```layers block"
    lines = [line.split() for line in block.group(1).strip().splitlines()]
    return {unit: len(lines) - 1 - n for n, units in enumerate(lines) for unit in units}


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports() -> list[tuple[str, str, str]]:
    """(importing file, its unit, imported module) for every import anywhere in a file, functions included."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(".".join(path.relative_to(REPO).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = (
                    [node.module] if node.module != "ebm_platform" else [f"ebm_platform.{a.name}" for a in node.names]
                )
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            found += [(str(path.relative_to(REPO)), unit, m) for m in modules]
    return found


def test_every_module_is_on_a_floor():
    units = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file())
    }
    units -= {"__init__"}
    assert units - set(floors()) == set(), "place these in docs/architecture.md's layers block"
    assert set(floors()) - units == set(), "the layers block names modules that do not exist"


def upward(found: list[tuple[str, str, str]], floor: dict[str, int]) -> list[str]:
    """The imports of `found` that reach a floor above the importing module's."""
    return [
        f"{path} ({unit}, floor {floor[unit]}) imports {module} (floor {floor[unit_of(module)]})"
        for path, unit, module in found
        if module.startswith("ebm_platform.") and floor[unit_of(module)] > floor[unit]
    ]


def test_no_import_runs_back_up():
    assert upward(imports(), floors()) == []


def test_only_the_wiring_imports_dagster():
    leaks = [
        f"{path} imports {module}"
        for path, unit, module in imports()
        if module.split(".")[0] in ("dagster", "dagster_duckdb", "dagster_webserver") and unit not in DAGSTER_ALLOWED
    ]
    assert leaks == []


def test_the_check_reports_an_import_that_runs_back_up():
    found = [
        ("ebm_platform/corpus/x.py", "corpus", "ebm_platform.retrieval.pipeline"),  # up: reported
        ("ebm_platform/retrieval/y.py", "retrieval", "ebm_platform.corpus.windows"),  # down: fine
        ("ebm_platform/corpus/z.py", "corpus", "ebm_platform.landing_state"),  # same floor: fine
    ]
    assert [line.split()[0] for line in upward(found, floors())] == ["ebm_platform/corpus/x.py"]
