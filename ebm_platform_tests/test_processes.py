"""Processes that `ebm` starts end with it: the step server (multiprocessing's forkserver) leaves at
once when its parent exits, a Ctrl-C stops the worker processes at once, and the tests' session
runner reports what a program leaves behind."""

from __future__ import annotations

import os

import pytest

from ebm_platform_tests.conftest import REPO
from ebm_platform_tests.sessions import run_python

# A preloaded module whose exit handler never returns in time, as a library's may not.
SLOW_EXIT = "import atexit, time\natexit.register(time.sleep, 3600)\n"

START_STEP_SERVER = """
import multiprocessing, time
context = multiprocessing.get_context("forkserver")
context.set_forkserver_preload({preload})
child = context.Process(target=time.sleep, args=(0,))
child.start()
child.join()
print("child", child.exitcode)
"""


def _environment(tmp_path) -> dict[str, str]:
    (tmp_path / "slow_exit.py").write_text(SLOW_EXIT)
    return {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}


def test_the_step_server_leaves_when_its_parent_exits_whatever_its_modules_do_at_exit(tmp_path):
    code = START_STEP_SERVER.format(preload=["slow_exit", "ebm_platform.forkserver_exit"])
    done = run_python(code, _environment(tmp_path), REPO, timeout=300, linger=120)
    assert done.returncode == 0 and "child 0" in done.stdout


def test_a_step_server_left_running_fails_with_its_stack(tmp_path):
    """Without forkserver_exit the forkserver sits in the slow exit handler: the runner says so."""
    code = START_STEP_SERVER.format(preload=["slow_exit"])
    with pytest.raises(pytest.fail.Exception, match="left processes running") as failure:
        run_python(code, _environment(tmp_path), REPO, timeout=300, linger=5)
    message = str(failure.value)  # the process listed, and faulthandler's report of it
    assert "multiprocessing.forkserver import main" in message and "Fatal Python error: Aborted" in message


def test_a_program_that_runs_too_long_fails_with_its_stack(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="still running after 2 s") as failure:
        run_python("import time\ntime.sleep(600)", dict(os.environ), REPO, timeout=2)
    assert 'File "<string>", line 2' in str(failure.value)


# A call whose worker process dies (as a crash in native code kills it) the first `times` times it
# is given the key "b": each death is counted in a file, so a new worker knows how many went before.
# One worker, so that which calls were under way when it died does not depend on timing (with two, a
# fresh clone's run once blamed c and d as well: they had run beside b, their results lost with the pool).
CRASHING = """
import os
from pathlib import Path

def work(folder, key, times):
    count = Path(folder) / key
    died = int(count.read_text()) if count.exists() else 0
    if key == "b" and died < times:
        count.write_text(str(died + 1))
        os._exit(9)
    return key * 2
"""

RUN_IN_WORKERS = """
from ebm_platform.process import run_in_workers
from crashing import work
deaths = []
try:
    for key, result in run_in_workers(
        work, {{k: ({folder!r}, k, {times}) for k in "abcd"}}, 1, on_death=lambda keys, n: deaths.append((sorted(keys), n))
    ):
        print("result", key, result)
except RuntimeError as error:
    print("error", error)
print("deaths", deaths)
"""


def _run_crashing(tmp_path, times: int):
    (tmp_path / "crashing.py").write_text(CRASHING)
    code = RUN_IN_WORKERS.format(folder=str(tmp_path), times=times)
    return run_python(code, {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}, REPO, timeout=300)


def test_a_call_whose_worker_dies_runs_again_in_a_new_worker(tmp_path):
    done = _run_crashing(tmp_path, times=1)
    results = sorted(line for line in done.stdout.splitlines() if line.startswith("result"))
    assert results == ["result a aa", "result b bb", "result c cc", "result d dd"], done.stdout + done.stderr
    deaths = next(line for line in done.stdout.splitlines() if line.startswith("deaths"))
    assert "'b'" in deaths and ", 2)" in deaths  # told once, before the second attempt


def test_a_call_whose_worker_always_dies_fails_with_its_name(tmp_path):
    done = _run_crashing(tmp_path, times=99)
    assert "error the worker processes running b died 3 times" in done.stdout, done.stdout + done.stderr
    assert "result b" not in done.stdout


def test_a_run_left_started_by_a_dead_worker_is_marked_failed_and_no_other():
    from datetime import UTC, datetime, timedelta

    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun

    from ebm_platform.runs import fail_orphaned_runs

    instance = DagsterInstance.ephemeral()
    since = datetime.now(UTC) - timedelta(seconds=5)
    for run_id, partition, status in (
        ("a" * 32, "LBP", DagsterRunStatus.STARTED),  # its worker died
        ("b" * 32, "MACL", DagsterRunStatus.STARTED),  # another partition's, still running
        ("c" * 32, "LBP", DagsterRunStatus.SUCCESS),
    ):
        instance.add_run(
            DagsterRun(job_name="conditions_job", run_id=run_id, status=status, tags={"dagster/partition": partition})
        )
    assert fail_orphaned_runs(instance, "conditions_job", ["LBP"], since, "its worker died") == ["aaaaaaaa"]
    assert {run.run_id[0]: run.status for run in instance.get_runs()} == {
        "a": DagsterRunStatus.FAILURE,
        "b": DagsterRunStatus.STARTED,
        "c": DagsterRunStatus.SUCCESS,
    }


def test_numpy_blas_runs_on_one_thread_where_the_definitions_are_loaded() -> None:
    """OpenBLAS's second thread spun between the query path's small matrix products (1.8 cores busy for one
    question's 1.0): every process that loads the definitions, and so every step, keeps it to one thread."""
    from threadpoolctl import threadpool_info

    import ebm_platform.definitions  # noqa: F401

    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas), blas


# Calls that would run for ten minutes, each saying when it began.
SLEEPING = """
import time

def work(key):
    print("began", key, flush=True)
    time.sleep(600)
"""

INTERRUPTED = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, whatever the test runner ignores
from ebm_platform.process import run_in_workers
from sleeping import work
try:
    for key, _ in run_in_workers(
        work, {k: (k,) for k in "abcd"}, 2, on_stop=lambda keys: print("stopped", sorted(keys), flush=True)
    ):
        print("result", key, flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_a_ctrl_c_stops_the_workers_at_once_and_names_the_calls_under_way(tmp_path):
    """The workers leave the terminal's process group: the Ctrl-C reaches the caller alone, which kills
    them instead of waiting for their calls (and the next ones queued) to finish, and says which were
    under way; nothing is left running. Before, each worker got the Ctrl-C too, and the caller waited for
    the next queued call: ten minutes here, two more partition runs in `make demo`."""
    (tmp_path / "sleeping.py").write_text(SLEEPING)
    done = run_python(
        INTERRUPTED,
        {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"},
        REPO,
        timeout=120,
        linger=10,
        interrupt_when=lambda printed: printed.count("began") == 2,
    )
    assert "stopped ['a', 'b']" in done.stdout and "interrupted" in done.stdout, done.stdout + done.stderr
    assert "result" not in done.stdout and "began c" not in done.stdout


def test_a_worker_adopts_its_callers_environment_and_rereads_its_settings(tmp_path):
    """`adopt_environment`: on top of the worker's own environment, or (`replace`) exactly the caller's, so that
    a variable the caller unset is gone; the settings read afterwards are the caller's."""
    from ebm_platform.settings import adopt_environment, get_settings

    saved = dict(os.environ)
    try:
        caller = {**saved, "EBM_LAKE": str(tmp_path / "lake")}
        os.environ["EBM_WORKER_ONLY"] = "1"
        get_settings()
        adopt_environment(caller)
        assert os.environ["EBM_WORKER_ONLY"] == "1" and get_settings().lake == tmp_path / "lake"
        adopt_environment(caller, replace=True)
        assert "EBM_WORKER_ONLY" not in os.environ and get_settings().lake == tmp_path / "lake"
    finally:
        os.environ.clear()
        os.environ.update(saved)
        get_settings.cache_clear()
