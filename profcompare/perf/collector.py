"""When Python's cyclic garbage collector runs in a command's process.

A command lives seconds and mostly allocates objects that live as long: modules, classes and
functions while it imports numpy, pandas, the simulator and the renderers, then report tables.
The collector's young-generation scans find nothing to free in them, and cost CPU in proportion
to what they scan. Measured in ``profcompare run onchip offchip-sharded`` with ``gc.callbacks``:

* with Python's default thresholds (700, 10, 10), about 250 collections, 0.05-0.08 CPU seconds;
  with a young generation of 50,000 objects (:data:`COMMAND_GC_THRESHOLDS`), three;
* of those, two ran while the comparison and simulator modules were imported, 13-14 ms each
  (every object of the modules imported so far scanned, 0 and 370 objects freed);
* and the interpreter's last full collection at exit took 35 ms, scanning every object the run
  had made, just before the operating system takes the process's memory back whole.

So imports (:func:`importing`) run without collections and leave their objects in the oldest
generation, as a collection would have left them (they survive), without scanning them; and at
exit (:func:`skip_exit_collection`) nothing is scanned. Cyclic garbage made meanwhile waits for a
full collection; memory held by arrays and tables is freed by reference counting as always.
Reading a report store pauses collections too (:func:`paused`): it materialises millions of
short-lived objects, none in a cycle.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The collector's thresholds in a command's process (Python's default: 700, 10, 10); see above.
COMMAND_GC_THRESHOLDS = (50_000, 20, 20)

_exit_hook_registered = False
_lock = threading.Lock()
#: bodies of :func:`paused` running now, and whether the collector was enabled before the first
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """No collections while the body runs; afterwards the collector is enabled or not, as it
    was. Bodies running at once (nested, or in several threads) share one pause, which ends with
    the last of them."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


@contextmanager
def importing() -> Iterator[None]:
    """Pause collections (:func:`paused`) while the body imports modules; then move every object
    made so far to the oldest generation without scanning it (``gc.freeze`` then
    ``gc.unfreeze``, which also resets the young generation's count). Objects the process froze
    itself stay frozen: then nothing is moved (``gc.unfreeze`` would unfreeze them too)."""
    with paused():
        try:
            yield
        finally:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()


def _freeze_at_exit() -> None:
    gc.freeze()


def skip_exit_collection() -> None:
    """Make the interpreter's last collection, at exit, scan nothing: at exit every object this
    process made is frozen (``gc.freeze``; the atexit handler runs before the interpreter's
    final collection). Objects are still freed by reference counting as modules are torn down.
    Registered once per process."""
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_freeze_at_exit)
        _exit_hook_registered = True


__all__ = ["COMMAND_GC_THRESHOLDS", "importing", "paused", "skip_exit_collection"]
