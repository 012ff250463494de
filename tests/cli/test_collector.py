"""A command's process runs imports without collections and skips the collection at exit
(profcompare.perf.collector): counted in objects and collections, never in seconds."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from profcompare.perf import collector

ROOT = Path(__file__).resolve().parents[2]


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


@pytest.mark.parametrize("enabled", [True, False])
def test_imports_run_without_collections_and_leave_their_objects_old(
        monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    thresholds = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.callbacks.append(count)  # the list the interpreter calls: appended to, not replaced
    try:
        gc.set_threshold(100, 10, 10)  # a young collection every 100 objects, were it enabled
        (gc.enable if enabled else gc.disable)()
        with collector.importing():
            collections.clear()  # what ran before the pause does not count
            made = [[i] for i in range(5_000)]  # as a module's objects, tracked and surviving
            assert collections == []
            assert _in_generation(made, 0)
        assert collections == []
        assert gc.isenabled() is enabled
        assert gc.get_count()[0] < 100  # the young generation starts empty again
        assert _in_generation(made, 2) and not _in_generation(made, 0)
        gc.enable()
        [[i] for i in range(1_000)]  # once it is over, the collector runs again
        assert collections
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        (gc.enable if was_enabled else gc.disable)()


def test_objects_the_process_froze_itself_stay_frozen() -> None:
    kept = [[i] for i in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector.importing():
            [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
        assert not any(o is kept for g in range(3) for o in gc.get_objects(generation=g))
    finally:
        gc.unfreeze()


def test_a_pause_inside_another_leaves_the_collector_off_until_the_outer_one_ends() -> None:
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        with collector.importing():
            with collector.paused():  # reading a report while importing, say
                pass
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        (gc.enable if was_enabled else gc.disable)()


def test_bodies_in_two_threads_share_one_pause() -> None:
    import threading

    was_enabled = gc.isenabled()
    gc.enable()
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector.importing():
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=other)
    try:
        with collector.importing():
            thread.start()
            assert inside.wait(30)
        assert not gc.isenabled()  # the other thread is still importing
        leave.set()
        thread.join(30)
        assert gc.isenabled()  # the last one out resumes the collector
    finally:
        leave.set()
        thread.join(30)
        (gc.enable if was_enabled else gc.disable)()


_EXIT_SCRIPT = textwrap.dedent("""
    import gc, sys
    from profcompare.cli import main

    gc.collect()
    class Noisy:
        def __del__(self):
            print("finalised", flush=True)

    garbage = Noisy()
    garbage.cycle = garbage  # cyclic garbage: only a collection finds it
    del garbage
    if sys.argv[1] == "command":  # the process's own command line, as the console script runs it
        sys.argv = ["profcompare", "--version"]
        main()
    elif sys.argv[1] == "embedded":  # a caller's process running a command
        main(["--version"])
""")


def _exit(mode: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, mode], capture_output=True, text=True, check=True,
                          env=env).stdout


def test_a_command_leaves_its_objects_to_the_system_at_exit_instead_of_collecting_them() -> None:
    assert "finalised" in _exit("plain")  # Python's last collection at exit finds the cycle
    assert "finalised" not in _exit("command")  # after the process's command nothing is scanned at exit
    assert "finalised" in _exit("embedded")  # a caller's process keeps its own exit
