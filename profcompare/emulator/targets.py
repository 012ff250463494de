"""Device data for the compile model: Mk1 (GC2), Mk2 (GC200, the default) and Bow.

Every number is data, kept in this one module, and every number names its source: a section
or row of ``shared/reference/ipu_facts.md`` ("facts 1.1 Tiles per IPU"), or the word
ASSUMPTION with the reason it was chosen. ``docs/ipu-model.md`` explains how each one is used.

The confidence letters of the reference carry over: A = Graphcore documentation or source,
B = Graphcore-published output, C = secondary source, D = arithmetic on A/B/C numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from profcompare.errors import ProfcompareError
from profcompare.model import Target

KiB = 1024


@dataclass(frozen=True)
class DeviceSpec:
    """One IPU generation as the compile model sees it (per IPU or per tile, as named).

    ``sources`` maps every field name to where its value comes from.
    """

    architecture: str
    # -- chip ---------------------------------------------------------------------------
    tiles_per_ipu: int
    bytes_per_tile: int
    clock_hz: float
    worker_contexts: int
    amp_flops_per_cycle_fp16: int  # per tile
    amp_flops_per_cycle_fp32: int  # per tile
    datapath_bytes: int  # vector unit width: 2 x fp32 or 4 x fp16 per cycle per tile
    exchange_bytes_per_cycle: int  # per receiving tile
    non_interleaved_bytes: int  # start of the interleaved region in each tile
    # -- sync and transfers ---------------------------------------------------------------
    internal_sync_cycles: int  # on-chip barrier (a Sync step named Internal)
    global_sync_cycles: int  # barrier involving host, gateway or other IPUs (Sync, External)
    vertex_overhead_cycles: int  # fixed cost of a compute set (OnTileExecute) with little work
    exchange_overhead_cycles: int  # fixed cost of an exchange inside a non-matmul compute set
    exchange_latency_cycles: int  # one word between two tiles: a small exchange's fixed cost (exchange_cost.py)
    exchange_reach_cycles: int  # more for receivers spread over every tile of the IPU (exchange_cost.py)
    ipu_link_bytes_per_s: float  # one ring hop between neighbouring IPUs, per direction
    host_bytes_per_s: float  # host <-> IPUs stream copies: one host link shared by a gateway's IPUs
    stream_copy_begin_cycles: int  # StreamCopyBegin of a host transfer's data copy (the host's wait)
    stream_copy_end_cycles: int  # StreamCopyEnd of a host transfer's data copy
    stream_copy_mid_cycles: int  # fixed cost of a StreamCopyMid (a copy of a few bytes)
    host_sync_begin_cycles: int  # StreamCopyBegin of the control copy before each host transfer
    host_sync_end_cycles: int  # StreamCopyEnd of that control copy (its Mid: stream_copy_mid_cycles)
    run_start_wait_cycles: int  # a run's wait for the host in its opening control copies
    gateway_bytes_per_s: float  # Streaming Memory transfers: one gateway shared by its IPUs
    ipus_per_gateway: int  # IPUs that share one gateway (host link and Streaming Memory path)
    remote_transfer_seconds: float  # fixed cost of one remote exchange: a transfer, or a merged group (fitted)
    run_overhead_seconds: float  # host/runtime time of one session.run outside the device (fitted)
    # -- PopLibs mapping ------------------------------------------------------------------
    min_bytes_per_tile: int  # mapTensorLinearly minimum per tile
    # -- memory categories ----------------------------------------------------------------
    stack_bytes_per_tile: int
    vertex_state_bytes: int  # per vertex instance
    host_packet_header_bytes_per_tile: int
    control_code_base_bytes: int  # per tile, program skeleton
    control_code_bytes_per_step: int  # per tile, every static program step (sync + branch)
    control_code_bytes_per_participating_step: int  # per tile taking part in a step
    internal_exchange_code_bytes: int  # per tile per static DoExchange
    host_exchange_code_bytes: int  # per tile per static StreamCopy/RemoteLoad/RemoteStore
    global_exchange_code_bytes: int  # per tile per ring step of a static collective
    copy_descriptor_bytes: int  # per tile per tensor copied by a static Copy
    codelet_bytes: Mapping[str, int] = field(default_factory=dict)  # vertex code per codelet kind
    sources: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codelet_bytes", MappingProxyType(dict(self.codelet_bytes)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        missing = [f.name for f in dataclasses.fields(self) if f.name not in ("sources", "architecture")
                   and f.name not in self.sources]
        if missing:
            raise ValueError(f"DeviceSpec {self.architecture}: no source for {missing}")

    @property
    def interleaved_bytes(self) -> int:
        """Bytes of the interleaved region of a tile (the rest of the tile)."""
        return self.bytes_per_tile - self.non_interleaved_bytes

    def vector_width(self, dtype_itemsize: int) -> int:
        """Elements per vector-unit cycle for an element of ``dtype_itemsize`` bytes (facts 2.2)."""
        return max(1, self.datapath_bytes // max(1, dtype_itemsize))

    def amp_flops_per_cycle(self, dtype: str) -> int:
        """AMP FLOPs per cycle per tile for a matmul on ``dtype`` inputs."""
        return self.amp_flops_per_cycle_fp16 if dtype == "float16" else self.amp_flops_per_cycle_fp32

    def replace(self, **changes: object) -> DeviceSpec:
        """A copy with some fields changed (e.g. a calibration experiment)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def target(self, replicas: int = 1, ipus_per_replica: int = 1) -> Target:
        """The report-model Target for ``replicas`` replicas of ``ipus_per_replica`` IPUs each.

        The device gets ``num_ipus_for(replicas, ipus_per_replica)`` IPUs, as popxl does.
        """
        return Target(
            architecture=self.architecture,
            num_ipus=num_ipus_for(replicas, ipus_per_replica),
            tiles_per_ipu=self.tiles_per_ipu,
            bytes_per_tile=self.bytes_per_tile,
            clock_hz=float(self.clock_hz),
            num_replicas=int(replicas),
            ipus_per_replica=int(ipus_per_replica),
        )


def num_ipus_for(replicas: int, ipus_per_replica: int = 1) -> int:
    """IPUs a popxl Session acquires: the next power of two >= replicas x ipus_per_replica.

    Source: shared/reference/popxl.md 1.10 ("Number of IPUs = 2**ceil(log2(ipus_per_replica x
    instance_replication_factor))"); facts 2.7 (replica counts are powers of two for rings).
    """
    need = max(1, int(replicas) * int(ipus_per_replica))
    return 1 << (need - 1).bit_length()


# The two fitted constants (docs/ipu-model.md "Calibration"), solved by
# `python benchmarks/calibrate_time.py` on the public timings of the remote-variables tutorial
# (facts 3 item 1; graphcore/tutorials notebook outputs): the per-run host/runtime time on its
# inference session (1 replica, batch 80: 0.8002 ms per run), then the fixed cost of a remote
# exchange (one transfer, or the transfers of one merged exchange: compile/remote_exchange.py) on
# its off-chip sharded training session (DP 4, GA 4, micro-batch 8,
# threshold 512: 3.3694 ms per run). benchmarks/fidelity.py validates them on the others.
FITTED_RUN_OVERHEAD_SECONDS = 6.956e-4
FITTED_REMOTE_TRANSFER_SECONDS = 8.500e-5

#: The real Graph Analyser trace in shared/data (ga_cache_popxl_mnist_pipelining_2ipu.sqlite,
#: popxl-addons' pipelined MNIST on 2 Mk2 IPUs; its README): median block lengths in cycles.
TRACE_SOURCE = ("shared/data/ga_cache_popxl_mnist_pipelining_2ipu.sqlite (real Graph Analyser trace of "
                "a popxl MNIST program on Mk2, B), median block length")

#: The same trace's host stream copies (docs/ipu-model.md section 12): every host transfer is a
#: control copy (a few bytes to the replica's first IPU) then the data copy, each a Begin on every
#: IPU (ending together, once the last IPU has arrived), a Mid on the IPU of the data and an End on
#: every IPU; a run opens with two control copies. Measured per copy on both IPUs, 2 runs of 19.
HOST_COPY_SOURCE = ("shared/data/ga_cache_popxl_mnist_pipelining_2ipu.sqlite (real Graph Analyser trace, "
                    "Mk2, B), host stream copies matched across its 2 IPUs")

#: The same trace's DoExchange blocks (docs/ipu-model.md section 7, "Small exchanges"): each copy
#: takes the same cycles at every execution (2 runs).
EXCHANGE_SOURCE = ("shared/data/ga_cache_popxl_mnist_pipelining_2ipu.sqlite (real Graph Analyser trace, "
                   "Mk2, B), DoExchange blocks")

_COMMON_SOURCES: dict[str, str] = {
    "worker_contexts": "facts 1.1 'Hardware contexts per tile' (A): 1 supervisor + 6 workers",
    "datapath_bytes": "facts 2.2 (A/D): dataPathWidth 64 bit, vector width 2 for FLOAT, 4 for HALF",
    "exchange_bytes_per_cycle": "facts 1.1 'On-chip exchange bandwidth' (D: 4.1 B/cycle/tile) and "
    "'Exchange bytes/cycle/tile used by early PopLibs planner' (A old: 4)",
    "global_sync_cycles": TRACE_SOURCE + " of ExternalSync: 131 cycles",
    "internal_sync_cycles": TRACE_SOURCE + " of InternalSync: 94 cycles",
    "vertex_overhead_cycles": TRACE_SOURCE + ": the on-tile copies of small activations (OnTileCopy "
    "compute sets) take 242 cycles each, the fixed cost of a compute set with little work (D)",
    "exchange_overhead_cycles": TRACE_SOURCE + " of DoExchange: 117 cycles (small exchanges); kept for "
    "the exchange a reduction's final step or an element-wise op's broadcast opens with",
    "exchange_latency_cycles": EXCHANGE_SOURCE + ": the repeat loop's iterator copied into the loop body "
    "(copy48_..._iterator_to_..._Iterator___/ExchangePre, 4 bytes from one tile to one tile) takes 89 "
    "cycles, less its one word at exchange_bytes_per_cycle: 88",
    "exchange_reach_cycles": EXCHANGE_SOURCE + ": the program Switch's control value broadcast to every "
    "tile (copy103_switchControlBroadcast88/ExchangePre, 4 bytes) takes 128 cycles, 39 more than the "
    "iterator's one-tile copy; ASSUMPTION: the latency grows linearly with the share of the IPU's tiles "
    "that receive (facts 1.3: on-chip exchange latency depends on proximity)",
    "stream_copy_begin_cycles": HOST_COPY_SOURCE + ": the data copies' StreamCopyBegin from the last IPU's "
    "arrival to the copy (the host's wait), median of 36: 7,903 cycles",
    "stream_copy_end_cycles": HOST_COPY_SOURCE + ": the data copies' StreamCopyEnd after the longest Mid, "
    "median of 36: 9,870 cycles",
    "stream_copy_mid_cycles": HOST_COPY_SOURCE + ": the control copies' StreamCopy (Mid) of a few bytes, "
    "median of 36: 1,109 cycles (a label copy of 20 B takes about 1,070 too); a Mid is this plus its bytes over "
    "host_bytes_per_s",
    "host_sync_begin_cycles": HOST_COPY_SOURCE + ": the control copies' StreamCopyBegin from the last IPU's "
    "arrival, median of 36: 269 cycles",
    "host_sync_end_cycles": HOST_COPY_SOURCE + ": the control copies' StreamCopyEnd, median of 36: 140 cycles",
    "run_start_wait_cycles": HOST_COPY_SOURCE + ": the Begin of each run's second opening control copy, "
    "mean of the 2 runs: 464,832 cycles (0.35 ms at 1.33 GHz); ASSUMPTION: part of run_overhead_seconds, the "
    "host's per-run work, spent while the device waits (docs/ipu-model.md section 12)",
    "host_bytes_per_s": "facts 1.2 'Measured device-to-host rate via gateway' (B): 5.5 GB/s; "
    "ASSUMPTION that host-to-device is the same and that the IPUs of one gateway share it (one host NIC)",
    "gateway_bytes_per_s": "facts 1.2 'Gateway to IPU path' (C/D): PCIe Gen4 x8 = 15.75 GB/s per "
    "direction; ASSUMPTION: the IPUs of one IPU-M2000 reach Streaming Memory through one gateway "
    "and share that rate when they transfer at once",
    "ipus_per_gateway": "facts 1.1/1.2 (A/C): an IPU-M2000 holds 4 IPUs and one IPU-Gateway",
    "remote_transfer_seconds": "fitted (1 of 2): tutorial off-chip sharded MNIST, 3.3694 ms per run "
    "(facts 3 item 1), the fixed cost of one remote exchange (a transfer, or a merged group); "
    "benchmarks/calibrate_time.py",
    "run_overhead_seconds": "fitted (2 of 2): tutorial inference session, 0.8002 ms per run "
    "(facts 3 item 1); benchmarks/calibrate_time.py",
    "min_bytes_per_tile": "facts 2.2 (A): mapTensorLinearly minBytesPerTile = 128",
    "stack_bytes_per_tile": "facts 2.3 (B): Mk1 adder 3,168 B per tile on every tile; ASSUMPTION "
    "for Mk2/Bow (facts 4: Mk2 stack size unknown)",
    "host_packet_header_bytes_per_tile": "facts 2.3 (B): Mk1 ~8.6 B/tile, Mk2 tut4 ~8.4 B/tile",
    "control_code_base_bytes": "anchored on facts 2.3 (B): the Mk1 adder (11 program steps in the "
    "model) has 851,272 B of control code = 700 B/tile; with the per-step sizes below the fixed "
    "part is 400 B (benchmarks/code_anchors.py: model within 1%)",
    "control_code_bytes_per_step": "ASSUMPTION: every tile runs every step's sync and branch "
    "(~2 instructions of 4 B); facts 4 says growth per step is unknown",
    "control_code_bytes_per_participating_step": "ASSUMPTION: a tile taking part in a step also "
    "holds its vertex-launch / exchange-call sequence (~6 instructions of 4 B)",
    "internal_exchange_code_bytes": "ASSUMPTION anchored on facts 2.3 (B): Mk1 adder 60,792 B "
    "internal exchange code = 50 B/tile for its exchanges",
    "host_exchange_code_bytes": "ASSUMPTION anchored on facts 2.3 (B): Mk1 adder 289 B/tile of "
    "host exchange code for about three host transfers, i.e. ~96 B per tile per transfer",
    "global_exchange_code_bytes": "ASSUMPTION: like internal exchange code (48 B per tile per "
    "exchange) for each ring step of a collective; facts 4 has no figure",
    "copy_descriptor_bytes": "ASSUMPTION: facts 2.3 (B) shows copy descriptors are tiny (Mk2 tut4 "
    "3.1 KiB in total); 8 B per tile per copied tensor",
    "codelet_bytes": "ASSUMPTION anchored on facts 2.3 (B): Mk1 adder vertex code 170,788 B over "
    "1216 tiles = ~140 B per tile for one element-wise codelet; others scaled by complexity",
}

#: Vertex code bytes per codelet kind (ASSUMPTION, see _COMMON_SOURCES["codelet_bytes"]).
CODELET_BYTES: Mapping[str, int] = MappingProxyType(
    {
        "elementwise": 144,  # Mk1 adder datapoint
        "matmul": 1536,  # AMP conv-partial + transpose + partials reduction codelets
        "reduce": 384,
        "copy": 96,
        "collective": 256,  # reduction codelet + exchange bookkeeping for rings
        "nonlinearity": 320,  # gelu/softmax polynomial code
        "optimizer": 512,  # Adam / moving-average update codelets
        "loss": 384,
    }
)

MK2 = DeviceSpec(
    architecture="Mk2",
    tiles_per_ipu=1472,
    bytes_per_tile=624 * KiB,
    clock_hz=1.33e9,
    worker_contexts=6,
    amp_flops_per_cycle_fp16=128,
    amp_flops_per_cycle_fp32=32,
    datapath_bytes=8,
    exchange_bytes_per_cycle=4,
    non_interleaved_bytes=208 * KiB,
    internal_sync_cycles=94,
    global_sync_cycles=131,
    vertex_overhead_cycles=242,
    exchange_overhead_cycles=117,
    exchange_latency_cycles=88,
    exchange_reach_cycles=39,
    ipu_link_bytes_per_s=32e9,
    host_bytes_per_s=5.5e9,
    stream_copy_begin_cycles=7903,
    stream_copy_end_cycles=9870,
    stream_copy_mid_cycles=1109,
    host_sync_begin_cycles=269,
    host_sync_end_cycles=140,
    run_start_wait_cycles=464_832,
    gateway_bytes_per_s=15.75e9,
    ipus_per_gateway=4,
    remote_transfer_seconds=FITTED_REMOTE_TRANSFER_SECONDS,
    run_overhead_seconds=FITTED_RUN_OVERHEAD_SECONDS,
    min_bytes_per_tile=128,
    stack_bytes_per_tile=3168,
    vertex_state_bytes=16,
    host_packet_header_bytes_per_tile=8,
    control_code_base_bytes=400,
    control_code_bytes_per_step=8,
    control_code_bytes_per_participating_step=24,
    internal_exchange_code_bytes=48,
    host_exchange_code_bytes=96,
    global_exchange_code_bytes=48,
    copy_descriptor_bytes=8,
    codelet_bytes=CODELET_BYTES,
    sources={
        **_COMMON_SOURCES,
        "tiles_per_ipu": "facts 1.1 'Tiles per IPU' (A/B): GC200 1472",
        "bytes_per_tile": "facts 1.1 'SRAM per tile' (A/B): 624 KiB",
        "clock_hz": "facts 1.1 'Clock' (D): 250 TFLOPS / (1472 tiles x 128 FLOP/cycle) = 1.33 GHz",
        "amp_flops_per_cycle_fp16": "facts 1.1 'AMP throughput per tile per cycle' (D): 64 FP16 MAC = 128 FLOP",
        "amp_flops_per_cycle_fp32": "facts 1.1 'AMP throughput per tile per cycle' (D): 16 FP32 MAC = 32 FLOP",
        "non_interleaved_bytes": "facts 2.1 Mk2 datapoint (D, a hypothesis of the reference, not "
        "documented): interleaved region starts 208 KiB into the tile",
        "ipu_link_bytes_per_s": "facts 1.1 'IPU-Links per IPU' (A/C): 10 links, 320 GB/s aggregate = "
        "32 GB/s per link (D); ASSUMPTION: the aggregate counts both directions (16 GB/s per "
        "direction per link) and a ring hop between neighbours uses 2 links (facts 1.1 M2000 wiring "
        "row: 6 links inside a pair, 2 leave the box), giving 32 GB/s per direction",
        "vertex_state_bytes": "facts 2.3 (B/D): Mk2 tut4 271 KiB for 16,877 vertices = ~16 B/vertex",
    },
)

BOW = MK2.replace(
    architecture="Bow",
    clock_hz=1.85e9,
    sources={
        **MK2.sources,
        "tiles_per_ipu": "facts 1.1 'Tiles per IPU' (A/B): Bow 1472",
        "bytes_per_tile": "facts 1.1 'SRAM per tile' (A/B): Bow 624 KiB",
        "clock_hz": "facts 1.1 'Clock' (A/C): Bow 1,850 MHz",
        "amp_flops_per_cycle_fp16": "facts 1.1 'AMP throughput per tile per cycle' (D): as Mk2",
        "amp_flops_per_cycle_fp32": "facts 1.1 'AMP throughput per tile per cycle' (D): as Mk2",
        "non_interleaved_bytes": "ASSUMPTION: same tile design as Mk2 (facts 1.1 memory banks 16 KiB, "
        "same); Mk2 value from facts 2.1 (D hypothesis)",
        "ipu_link_bytes_per_s": "ASSUMPTION: as Mk2; facts 1.1 Bow 'IPU-Link 512 Gbps' wording is "
        "ambiguous (per link or per direction), so the Mk2 derivation is kept",
        "vertex_state_bytes": "ASSUMPTION: as Mk2 (facts 2.3 Mk2 tut4 ~16 B/vertex)",
        "remote_transfer_seconds": "ASSUMPTION: the Mk2 fit is reused (facts 4: which hardware "
        "produced the tutorial timings is unknown; no Bow figure)",
        "run_overhead_seconds": "ASSUMPTION: the Mk2 fit is reused (host-side time)",
    },
)

MK1 = MK2.replace(
    architecture="Mk1",
    tiles_per_ipu=1216,
    bytes_per_tile=256 * KiB,
    clock_hz=1.6e9,
    amp_flops_per_cycle_fp16=64,
    amp_flops_per_cycle_fp32=16,
    non_interleaved_bytes=128 * KiB,
    vertex_state_bytes=12,
    sources={
        **MK2.sources,
        "tiles_per_ipu": "facts 1.1 'Tiles per IPU' (A/B): Mk1 1216",
        "bytes_per_tile": "facts 1.1 'SRAM per tile' (A/B): Mk1 256 KiB",
        "clock_hz": "facts 1.1 'Clock' (A): Mk1 1,600 MHz",
        "amp_flops_per_cycle_fp16": "facts 1.1 'AMP throughput per tile per cycle' (D): 32 FP16 MAC = 64 FLOP",
        "amp_flops_per_cycle_fp32": "facts 1.1 'AMP throughput per tile per cycle' (D): 8 FP32 MAC = 16 FLOP",
        "non_interleaved_bytes": "facts 2.1 Mk1 datapoint (B/D): 128 KiB + 128 KiB regions",
        "ipu_link_bytes_per_s": "facts 1.1/1.3 (C): C2 board, links of 64 GB/s bidirectional = 32 GB/s "
        "per direction; ASSUMPTION: one link per ring hop",
        "vertex_state_bytes": "facts 2.3 (B/D): Mk1 adder ~8 B internal state per vertex + 4 B per edge",
        "remote_transfer_seconds": "ASSUMPTION: the Mk2 fit is reused (no Mk1 figure; facts 4)",
        "run_overhead_seconds": "ASSUMPTION: the Mk2 fit is reused (host-side time)",
        "stack_bytes_per_tile": "facts 2.3 (B): Mk1 adder 3,168 B per tile on every tile",
    },
)

C600 = MK2.replace(
    architecture="C600",
    sources={
        **MK2.sources,
        "tiles_per_ipu": "Poplar target Ipu21 = the C600 PCIe card, a Mk2-class (GC200) IPU with FP8 "
        "support: 1472 tiles as Mk2 (facts 1.1); ASSUMPTION that the tile count is unchanged",
        "bytes_per_tile": "ASSUMPTION: as Mk2 (624 KiB, facts 1.1): the C600 carries the Mk2-class IPU",
        "clock_hz": "ASSUMPTION: as Mk2 (facts 1.1 Mk2 clock, D); no C600 clock in the reference",
        "gateway_bytes_per_s": "ASSUMPTION: the Mk2 value; a PCIe card reaches host memory over PCIe, "
        "not through an IPU-M2000 gateway",
    },
)

DEVICES: Mapping[str, DeviceSpec] = MappingProxyType({"mk1": MK1, "mk2": MK2, "bow": BOW, "c600": C600})
DEFAULT_DEVICE = MK2


def get_device(name: str | None) -> DeviceSpec:
    """The DeviceSpec named ``name`` (mk1, mk2, bow, c600, case-insensitive; also GC2/GC200 and
    Poplar's IPU Model names ipu1 -> mk1, ipu2 -> mk2, ipu21 -> c600).

    ``None`` or "" gives the default (Mk2). Raises ProfcompareError naming the valid choices.
    """
    if not name:
        return DEFAULT_DEVICE
    # Poplar's IPU Model names the architectures ipu1 (Mk1), ipu2 (Mk2) and ipu21 (the C600
    # card's Mk2-class IPU with FP8); Bow systems report ipu2 at a higher clock.
    aliases = {"gc2": "mk1", "ipu1": "mk1", "gc200": "mk2", "ipu2": "mk2", "ipu21": "c600", "bow2000": "bow"}
    key = name.strip().lower()
    key = aliases.get(key, key)
    if key not in DEVICES:
        raise ProfcompareError(f"unknown IPU target {name!r}; choose one of {', '.join(sorted(DEVICES))}")
    return DEVICES[key]


__all__ = [
    "BOW",
    "FITTED_REMOTE_TRANSFER_SECONDS",
    "FITTED_RUN_OVERHEAD_SECONDS",
    "CODELET_BYTES",
    "DEFAULT_DEVICE",
    "C600",
    "DEVICES",
    "MK1",
    "MK2",
    "DeviceSpec",
    "get_device",
    "num_ipus_for",
]
