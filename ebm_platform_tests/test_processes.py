"""Processes that `ebm` starts end with it: the step server (multiprocessing's forkserver) leaves at
once when its parent exits, and the tests' session runner reports what a program leaves behind."""

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
