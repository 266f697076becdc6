"""Run a Python program in a session of its own, as a user's shell would, and see what it leaves:
its output goes to files (a process it left behind cannot hold a pipe open), and when it runs too
long or leaves a process running, every Python process of its session prints its threads' stacks
(faulthandler on SIGABRT) into the failure message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Finished:
    """What a finished program printed and its exit code."""

    returncode: int
    stdout: str
    stderr: str


def session_members(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process of session `sid` (Linux /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
            if fields[0] != "Z" and int(fields[3]) == sid:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members.append((int(entry.name), cmdline.strip()[:160]))
        except (OSError, ValueError, IndexError):
            continue  # gone since the listing
    return members


def _dump_and_kill(sid: int, err: Path) -> str:
    """Ask every process of session `sid` for its stacks (SIGABRT; faulthandler prints them to the
    session's stderr file), kill what is left, and return the listing and the stacks."""
    members = session_members(sid)
    for pid, _ in members:
        try:
            os.kill(pid, signal.SIGABRT)
        except ProcessLookupError:
            pass
    time.sleep(3)
    try:
        os.killpg(sid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    listing = "\n".join(f"  {pid} {cmd}" for pid, cmd in members)
    return f"processes of the session:\n{listing}\nstderr (stacks last):\n{err.read_text(errors='replace')[-20000:]}"


def _wait(child: subprocess.Popen, timeout: float, out: Path, interrupt_when: Callable[[str], bool] | None) -> None:
    """Wait for `child` (subprocess.TimeoutExpired after `timeout` seconds); once what it printed satisfies
    `interrupt_when`, send SIGINT to its process group, as a Ctrl-C at its terminal would."""
    if interrupt_when is None:
        child.wait(timeout)
        return
    deadline = time.monotonic() + timeout
    while child.poll() is None:
        if interrupt_when(out.read_text()):
            os.killpg(child.pid, signal.SIGINT)
            child.wait(max(deadline - time.monotonic(), 0))
            return
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(child.args, timeout)
        time.sleep(0.2)


def run_python(
    code: str,
    env: dict[str, str],
    cwd: Path,
    timeout: float,
    linger: float = 30.0,
    interrupt_when: Callable[[str], bool] | None = None,
) -> Finished:
    """Run `python -c code` with `env` in a new session; fail (with every process's stacks) when it
    takes more than `timeout` seconds, or when a process of its session is still running `linger`
    seconds after it exited. With `interrupt_when`, a Ctrl-C reaches its terminal's process group once
    its output satisfies that test."""
    import pytest

    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        with out.open("w") as stdout, err.open("w") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-c", code],
                env={**env, "PYTHONFAULTHANDLER": "1"},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            try:
                _wait(child, timeout, out, interrupt_when)
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running after {timeout:.0f} s; {_dump_and_kill(child.pid, err)}")
            deadline = time.monotonic() + linger
            while session_members(child.pid) and time.monotonic() < deadline:
                time.sleep(0.5)
            if session_members(child.pid):
                pytest.fail(f"exited ({child.returncode}) but left processes running; {_dump_and_kill(child.pid, err)}")
        return Finished(child.returncode, out.read_text(), err.read_text())
