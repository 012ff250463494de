"""Two small program trees worked out by hand, the pair the program-tree tests compare."""

from __future__ import annotations

from profcompare.model import programs_from_rows

# base: main { matmul/100 { Convolve, Sync }, relu { OnTileExecute }, copy/Begin }
BASE = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "matmul/100", "matmul", 0),
    (2, 1, 2, "OnTileExecute", "matmul/100/Convolve", "matmul", 0),
    (3, 1, 2, "Sync", "matmul/100/Internal Sync", "matmul", 0),
    (4, 0, 1, "Sequence", "relu", "relu", 0),
    (5, 4, 2, "OnTileExecute", "relu", "relu", 0),
    (6, 0, 1, "StreamCopyBegin", "copy/Begin", "", 0),
])
# new: the matmul recompiled (ids in its names differ) and split (a Reduce added), relu gone,
# a gelu in its place, the copy unchanged; a second root
NEW = programs_from_rows([
    (10, None, 0, "Sequence", "main", "", None),
    (11, 10, 1, "Sequence", "matmul/102", "matmul", 0),
    (12, 11, 2, "OnTileExecute", "matmul/102/Convolve", "matmul", 0),
    (13, 11, 2, "Sync", "matmul/102/Internal Sync", "matmul", 0),
    (14, 11, 2, "OnTileExecute", "matmul/102/Reduce", "matmul", 0),
    (15, 10, 1, "Sequence", "gelu", "gelu", 0),
    (16, 15, 2, "OnTileExecute", "gelu", "gelu", 0),
    (17, 10, 1, "StreamCopyBegin", "copy/Begin", "", 0),
    (18, None, 0, "Sequence", "WeightsFromHost", "", 0),
])
