"""The cycles of a small on-chip exchange from what it moves (docs/ipu-model.md section 7, "Small
exchanges").

After the sync that opens it, an exchange runs the exchange code Poplar compiled for it: each
sending tile sends its words at times fixed at compile time, each receiving tile listens to its
senders, and the data crosses the exchange fabric in a number of cycles that grows with the distance
between the tiles (facts 1.3: proximity matters). So a small exchange costs:

- a latency: one word from one tile to another (``exchange_latency_cycles``, 88: the real trace's
  copy of the repeat loop's iterator, 4 bytes from one tile to one tile, is 89 cycles);
- a reach: the latency grows with how far the receivers spread, up to ``exchange_reach_cycles`` (39)
  more when every tile of the IPU receives (the real trace's broadcast of the program Switch's
  control value, 4 bytes to every tile, is 128 cycles). ASSUMPTION: linear in the share of the
  IPU's tiles that receive (the model knows how many tiles receive, not where they are);
- the words of the busiest receiving tile, one ``exchange_bytes_per_cycle`` word a cycle (facts 1.1:
  32 bits per cycle per tile).

Not modelled: the messages per receiving tile (each further sender costs the receiver instructions
to switch to it: popops' slice planner counts one ``setmux`` per sending tile), and where the tiles
sit (the model's reach is by count). The real trace's copies of 4 bytes (89, 128 cycles) and of a
[5, 10] one-hot tensor (74) show the position matters as much as the bytes.
"""

from __future__ import annotations

import math

from profcompare.emulator.targets import DeviceSpec


def small_exchange_cycles(device: DeviceSpec, bytes_per_tile: int, receiving_tiles: int, tiles: int) -> int:
    """Cycles of an exchange whose busiest receiving tile receives ``bytes_per_tile`` bytes and that
    ``receiving_tiles`` of the IPU's ``tiles`` tiles receive (see the module): one receiving tile
    adds no reach, every tile the whole of it."""
    share = min(1.0, max(0, receiving_tiles - 1) / max(1, tiles - 1))
    words = max(0, bytes_per_tile) / device.exchange_bytes_per_cycle
    return math.ceil(device.exchange_latency_cycles + device.exchange_reach_cycles * share + words)


__all__ = ["small_exchange_cycles"]
