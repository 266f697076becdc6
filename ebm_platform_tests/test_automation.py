"""The landing sensor requests runs for exactly the changed partitions; definitions load."""

import json

import dagster as dg

from ebm_platform.defs.automation import landing_sensor
from ebm_platform.defs.resources import LakeResource
from ebm_platform.settings import DEFAULT_CATALOGUE
from ebm_platform_tests.test_readers import GUIDELINE


def _tick(lake, cursor=None, instance=None):
    context = dg.build_sensor_context(
        cursor=cursor,
        instance=instance or dg.DagsterInstance.ephemeral(),
        resources={"lake": LakeResource(root=str(lake), catalogue_path=str(DEFAULT_CATALOGUE))},
    )
    return landing_sensor(context)


def test_changed_folders_are_observed_as_landing_files_partitions(lake):
    (lake / "landing" / "ACL").mkdir()
    (lake / "landing" / "ACL" / "g.md").write_bytes(GUIDELINE)
    first = _tick(lake)
    [observed] = first.asset_events
    assert observed.asset_key == dg.AssetKey("landing_files") and observed.partition == "ACL"
    assert observed.metadata["files"].value == 1 and observed.metadata["bytes"].value == len(GUIDELINE)
    assert observed.metadata["landing_digest"].value in first.run_requests[0].run_key
    assert _tick(lake, first.cursor).asset_events == []  # nothing changed, nothing observed
    (lake / "landing" / "PFP").mkdir()
    (lake / "landing" / "PFP" / "g.md").write_bytes(GUIDELINE)
    assert [e.partition for e in _tick(lake, first.cursor).asset_events] == ["PFP"]


def test_landing_lineage_and_the_weekly_refresh_as_on_cron():
    from datetime import datetime

    from ebm_platform.definitions import defs

    graph = defs.resolve_asset_graph()
    assert dg.AssetKey("landing_files") in graph.get(dg.AssetKey("source_documents")).parent_keys
    instance, refresh = dg.DagsterInstance.ephemeral(), dg.AssetSelection.assets("landing_imports")

    def evaluate(when: datetime, cursor=None):
        return dg.evaluate_automation_conditions(defs, instance, refresh, evaluation_time=when, cursor=cursor)

    sunday = evaluate(datetime(2026, 11, 29, 12))
    assert sunday.total_requested == 0
    monday = evaluate(datetime(2026, 11, 30, 3, 1), sunday.cursor)
    assert monday.get_requested_partitions(dg.AssetKey("landing_imports")) == {None}  # the 03:00 tick passed
    assert evaluate(datetime(2026, 11, 30, 9), monday.cursor).total_requested == 0  # once per tick


def test_new_guideline_for_acl_requests_acl_only(lake):
    (lake / "landing" / "PFP").mkdir()
    (lake / "landing" / "PFP" / "old.md").write_bytes(GUIDELINE)
    baseline = _tick(lake)
    assert [r.partition_key for r in baseline.run_requests] == ["PFP"]
    (lake / "landing" / "ACL").mkdir()
    (lake / "landing" / "ACL" / "new-guideline.md").write_bytes(GUIDELINE.replace(b"PFP", b"ACL"))
    result = _tick(lake, baseline.cursor)
    assert [r.partition_key for r in result.run_requests] == ["ACL"]
    assert result.run_requests[0].run_key.startswith("ACL:")
    again = _tick(lake, result.cursor)
    assert again.run_requests == []
    assert set(json.loads(again.cursor)["files"]) == {"ACL", "PFP"}


def test_changed_and_removed_files_trigger_their_partition(lake):
    folder = lake / "landing" / "ACL"
    folder.mkdir()
    (folder / "g.md").write_bytes(GUIDELINE)
    first = _tick(lake)
    (folder / "g.md").write_bytes(GUIDELINE + b"\nAn added sentence.\n")
    changed = _tick(lake, first.cursor)
    assert [r.partition_key for r in changed.run_requests] == ["ACL"]
    assert changed.run_requests[0].run_key != first.run_requests[0].run_key
    (folder / "g.md").unlink()
    removed = _tick(lake, changed.cursor)
    assert [r.partition_key for r in removed.run_requests] == ["ACL"]


def test_a_fresh_sensor_over_a_built_lake_requests_nothing_until_a_file_changes(lake):
    """`make dev` after `make demo`: the sensor's first tick finds what source_documents was built from."""
    from ebm_platform.defs.corpus import source_documents
    from ebm_platform_tests.conftest import lake_resources

    (lake / "landing" / "PFP").mkdir()
    (lake / "landing" / "PFP" / "g.md").write_bytes(GUIDELINE)
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize(
        [source_documents], partition_key="PFP", resources=lake_resources(lake), instance=instance
    ).success
    first = _tick(lake, instance=instance)
    assert first.run_requests == []
    (lake / "landing" / "PFP" / "g.md").write_bytes(GUIDELINE + b"\nA new paragraph.\n")
    assert [r.partition_key for r in _tick(lake, first.cursor, instance).run_requests] == ["PFP"]


def test_a_folder_reverted_to_earlier_content_runs_again(lake):
    folder = lake / "landing" / "ACL"
    folder.mkdir()
    (folder / "g.md").write_bytes(GUIDELINE)
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(lake, instance=instance)
    (folder / "g.md").write_bytes(GUIDELINE + b"\nAn added sentence.\n")
    changed = _tick(lake, first.cursor, instance)
    (folder / "g.md").write_bytes(GUIDELINE)  # back to the first content (a new mtime, the same bytes)
    reverted = _tick(lake, changed.cursor, instance)
    keys = [r.run_key for r in (*first.run_requests, *changed.run_requests, *reverted.run_requests)]
    assert len(keys) == 3 and len(set(keys)) == 3  # none of them would be dropped as a repeated run key
    assert keys[0].split(":")[1] == keys[2].split(":")[1]  # the same content digest


def test_definitions_load_with_the_23_partitions():
    from ebm_platform.definitions import conditions_partitions, defs
    from ebm_platform_tests.test_catalogue import PAPER_CODES

    assert conditions_partitions.get_partition_keys() == PAPER_CODES
    assert defs.resolve_job_def("conditions_job") is not None
    assert defs.resolve_sensor_def("landing_sensor").default_status == dg.DefaultSensorStatus.RUNNING
    specs = list(defs.resolve_all_asset_specs())
    assert len(specs) >= 18 and all(s.owners and s.tags.get("layer") == s.group_name and s.code_version for s in specs)
    versions = {s.group_name: s.code_version for s in specs}
    assert versions["corpus"] != versions["evaluation"]  # each layer versioned by its own packages


def _settle(defs, instance, cursor, start, ticks: int = 12):
    """Evaluate automation tick by tick; each request completes before the next tick (a runless
    materialisation). Returns {(asset, partition): [ticks requested]} and the cursor."""
    from datetime import timedelta

    requested: dict[tuple[str, str | None], list[int]] = {}
    for tick in range(ticks):
        result = dg.evaluate_automation_conditions(
            defs, instance, evaluation_time=start + timedelta(minutes=tick), cursor=cursor
        )
        cursor = result.cursor
        done = [p for r in result.results for p in r.true_subset.expensively_compute_asset_partitions()]
        for partition in done:
            requested.setdefault((partition.asset_key.to_user_string(), partition.partition_key), []).append(tick)
            instance.report_runless_asset_event(
                dg.AssetMaterialization(partition.asset_key, partition=partition.partition_key)
            )
    return requested, cursor


def test_one_changed_condition_runs_its_chain_then_each_global_once_and_empty_conditions_do_not_block():
    """Runless materialisations stand in for runs (each finishes before the next tick). Not covered
    here: evaluation_report, whose blocking-check clause needs check results recorded for each new
    materialisation, which runless events cannot re-record for a partition."""
    from datetime import datetime

    from ebm_platform.definitions import defs

    graph = defs.resolve_asset_graph()
    instance = dg.DagsterInstance.ephemeral()
    built = ("PFP", "ACL")  # the other 21 conditions have no files and were never materialised
    for key in graph.get_all_asset_keys():
        if key.to_user_string() in ("landing_files", "landing_imports"):
            continue
        for partition in built if graph.get(key).is_partitioned else (None,):
            instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition))
            for check in graph.get_check_keys_for_assets({key}):
                instance.report_runless_asset_event(dg.AssetCheckEvaluation(key, check.name, True, partition=partition))
    start = datetime(2026, 11, 24, 12)
    idle, cursor = _settle(defs, instance, None, start, ticks=2)
    assert idle == {}  # a built lake starts nothing
    instance.report_runless_asset_event(
        dg.AssetMaterialization("source_documents", partition="ACL")
    )  # the sensor's run
    requested, _ = _settle(defs, instance, cursor, start.replace(hour=13), ticks=8)
    requested = {k: v for k, v in requested.items() if not k[0].startswith("evaluation_")}
    assert {k for k in requested if k[1] is not None} == {
        (a, "ACL") for a in ("evidence_windows", "pico_extractions", "knowledge_graph", "window_index", "benchmark_qa")
    }
    assert {a for a, p in requested if p is None} == {  # every global, although 21 conditions were never built
        "corpus_report",
        "knowledge_tree",
        "benchmark_splits",
        "fused_candidates",
        "reranker_model",
        "candidate_pools",
        "betr_parameters",
        "betr_report",
    }
    assert all(len(ticks) == 1 for ticks in requested.values()), requested  # each ran once ...
    tick = {a: ticks[0] for (a, _), ticks in requested.items()}
    for asset in tick:  # ... and after everything upstream of it (a partition's chain shares one run)
        node = graph.get(dg.AssetKey(asset))
        for parent in node.parent_keys:
            if parent.to_user_string() in tick:
                same_run = graph.get(parent).is_partitioned and node.is_partitioned
                assert tick[asset] > tick[parent.to_user_string()] or same_run, (asset, parent)


def test_no_partitioned_asset_waits_on_a_dagster_pool():
    """Two partition runs at once (`ebm demo`, a backfill) must not claim one Dagster pool: Dagster
    1.13's SQLite claim can queue a step unassigned while the slot it waits for is free, and the run
    then waits for ever. Partition writers take their store's lock file instead (the warehouse's:
    `source_documents`), and only the global assets, one run at a time, sit in pools."""
    from ebm_platform.definitions import defs

    graph = defs.resolve_asset_graph()
    pooled = {
        key.to_user_string(): graph.get(key).is_partitioned
        for key in graph.get_all_asset_keys()
        if graph.get(key).is_executable and getattr(defs.resolve_assets_def(key).op, "pool", None)
    }
    assert pooled and not [name for name, partitioned in pooled.items() if partitioned], pooled
