"""Which output tile V8 uses for a problem: a small model computed from M, N and K, in plain Python.

V8 is persistent: one block per SM walks the tiles ``b, b + P, b + 2P, ...`` (P = SM count). Every tile
of one problem takes about the same time, so the busiest block does ``rounds = ceil(tiles / P)`` of
them, and the kernel's time is that block's. Three things decide which tile the model predicts fastest:

1. **Wave quantization.** ``tiles / P`` is the number of waves; the last one may be nearly empty.
   The *wave efficiency* ``tiles / (rounds * P)`` is the fraction of the SMs' tile slots that hold
   a tile. At 5120^3 a 128 x 256 tile gives 800 tiles = 6.06 waves: 7 rounds, and in the seventh
   only 8 of 132 SMs work (efficiency 0.87). A tile at the edge of M or N that sticks out of C is
   padding: the model counts whole tiles, so it pays for that too.
2. **Bytes moved per FLOP.** Per column of K, a tile of ``bm x bn`` loads one fp16 value from each of its
   ``bm + bn`` operand rows from L2 into shared memory, ``2 (bm + bn)`` bytes for ``2 bm bn`` FLOPs:
   ``1/bm + 1/bn`` bytes per FLOP. Then each WGMMA ``m64nNk16`` reads 64 x 16 values of A and N x 16 of B
   from shared memory for ``2 * 64 * N * 16`` FLOPs: ``1/64 + 1/N`` bytes per FLOP, whatever the warp
   group's share of the tile (a 128-row share issues two such instructions, each reading all of B). The
   model assumes that a tile that moves more bytes per FLOP runs slower per FLOP: its bytes compete with
   the MMAs for shared-memory bandwidth and, under the H200's 700 W cap that the large shapes hit (1.4 GHz
   instead of 1.98 in the recorded sweep), for power. It charges a linear cost per byte, both kinds
   alike: a tile's cost per FLOP is
   ``1 + OPERAND_BYTE_COST * (1/bm + 2/bn + 1/64)``.

3. **A nearly empty last column.** When bn does not divide N, the last column of tiles lies partly past N. The
   GPU checks of every tile at M = 3000, K = 4096 and seven values of N (`python -m matmul_bench check v8-menu`, logs
   plots/results/logs/v8-check*-2026-12-02.json) found such a tile slower than a full one: at N = 5000 the 648
   tiles of 128 x 192 (the last column 8 of 192 wide) took longer than the same 648 tiles, all full, at
   N = 5184. Why is not measured (TMA fills the part of a box past N with zeros; whether that costs is our
   hypothesis). The model charges the busiest block ``EDGE_COST * f^2`` more tiles for each round of the last
   column's tiles (``ceil(ceil(M / bm) / P)``, one up to M = 132 bm on the H200), f the share of the last column
   past N. EDGE_COST (below) is the least-squares fit of that curve to the five
   128 x 192 pairs of those checks that have the same tiles with and without an empty share (N = 5000, 5008,
   5056 against 5184; 4928, 4960 against 4992); tests/test_v8_tile_model.py refits it from the logs. 3000 x 5000
   was timed in two of those processes: the fit takes the edge log's time, and the other log's gives 0.38. Only
   N is charged: the checks varied N, and an edge in M is untested.

4. **Operand rows off the 32-byte sectors.** A row of A or B is ``2 K`` bytes long; when K is not a multiple of 16
   (so an odd multiple of 8: TMA needs K % 8 = 0) every other row starts 16 bytes into an L2 sector (for a base on 32
   bytes, as PyTorch allocates). The GPU check of every tile at 3072 x 7168 with K = 5000, 5016 (rows off the
   sectors) and 5056 (all rows on them; logs plots/results/logs/v8-check-ragged-k-2026-12-02.*, one process, recorded
   before this term existed, so its "model picks" column is the old model's) found every tile 15 to 65% slower per
   FLOP off the sectors; K = 5024 (rows on sectors, a partial last K-tile) cost 2 to 11%. ncu (128 x 192 at K = 5000
   against 5056, logs ncu-v8-128x192-*) showed what changes: the TMA loads made 3.2 times as many L2 read requests
   for the same data, 42% more sectors, and L2 ran at 91% of its peak throughput instead of 71%. Off the sectors
   every tile moved its operands at 5.3 to 6.4 TB/s, so the model estimates such a kernel as bound by L2, a resource
   all SMs share: its time is all the operand bytes its tiles load (rows past M and N are not loaded: TMA fills them
   with zeros) over one fitted rate, however the tiles fall into waves, and the model takes the larger of that and
   the estimate above. In the model's units the L2 estimate is
   ``bytes * MISALIGNED_FLOP_PER_BYTE / (2 * 128 * 256 * K * P)``: the FLOPs a 128 x 256 tile does per operand byte
   L2 delivers, fitted (least squares) to the ten (tile, K) timings of that check, each in units of that check's 128
   x 256 time at K = 5056. It is a fit, not a bound: half the timings lie below it. So at such K the model prefers
   the tile that loads the fewest bytes, usually 192 x 192.

5. **Clusters that share an operand (V9).** Two blocks of a cluster computing neighbouring tiles (a pair along M
   shares B, a pair along N shares A) load the shared tile once, each half of it, by TMA multicast. A pair is one
   unit of work for the waves: ``rounds = ceil(pairs / (P / 2))``, a pair whose second tile lies past M or N counted
   whole. The L2 bytes per FLOP drop (sharing B: ``1/bn + 1/(2 bm)`` instead of ``1/bm + 1/bn``), and so do the bytes
   the L2 bound of (4.) counts; the model takes the saved bytes off the cost per FLOP at OPERAND_BYTE_COST and adds
   CLUSTER_COST per FLOP for running in a cluster. That constant is a catch-all, not a measured cost: our reading is
   the pair's handshake (remote arrives, each block waiting for its peer's half), not profiled. It is the
   least-squares fit (of log time, each shape's scale free) to the development check of every (tile, sharing) at the
   field set's fitted half (src/matmul_data/field.py; log plots/results/logs/v9-check-fitted-2026-12-04.json, one
   process, 6 rounds, no warm-up): 0.10, rms error 3.4% (3.4% too at 0.08 and 0.12; 4.3% with no such cost). Seven of
   the half's nine shapes were timed: the padded BERT head was not, and the odd-N head is left out of the fit, as its
   register epilogue, which the model does not know, orders the tiles differently (256 x 128 ran 1.8 times as fast as
   192 x 192 there). With that cost, clusters are on only where the L2 bound binds (K % 16 != 0). Elsewhere that is a
   close call, not a finding: a 128 x 256 pair sharing B saves c / 256 = 0.093 per FLOP and pays 0.10, 0.4% behind
   the tile alone at 8192^3, well inside the fit's error; CLUSTER_COST = 0.08 (as good a fit) or V8's c refit to the
   record (27.3) turns clusters on wherever the model picks a 128-row tile (a 192 x 192 pair saves 0.071 per FLOP at
   c = 27.3, still under 0.10), and the tie goes to the kernel without them. The best pair ran within 4% of the best
   tile alone, with one gain the fitted model passes up: at Mixtral's w1 (2731 x 14336 x 4096) 128 x 192 sharing B
   ran 1.04 times the best tile alone. The three-run steps record of the V9 draft (128 x 256 sharing B over V8: 1.02,
   1.01 and 1.00 at 8192^3, 4096^3 and 16384 x 8192 x 1024, each interval across an edge of the parity band, so not
   resolved) shows no replicated gain where rows are on the sectors, and does not establish parity either.

The predicted time of a candidate, in units of one full-efficiency 128 x 256 tile, is

    max((rounds + edge_rounds) * (bm * bn) / (128 * 256) * cost_per_flop(tile) / cost_per_flop(128 x 256), l2_bound)

and :func:`choose` takes the smallest (the first of the menu on a tie). Apart from whether K is a multiple of 16,
K multiplies every term alike and never changes the choice. The L2 footprint and DRAM traffic are left out: with
V7's raster groups a wave reads about 0.001 bytes of DRAM per FLOP (16 A panels and 9 B panels for 132
tiles of 128 x 256), a fifth of what the H200's 4.8 TB/s could feed at 989 TFLOPS.

``OPERAND_BYTE_COST`` is fitted from the one recorded pair of kernels that differed only in the tile:
V6 with swizzled chunks at 8192^3, both walking row by row (swizzle_size 1), in the steps table "round 1" merged
over three runs on 2026-12-01 (rows v6-chunks and v6-chunks-256x128 of plots/results/nvidia-h200.json as of
commit fc2b338; later records, with the warm-up, replaced them), 128 x 256 at 1.0093 of cuBLAS and 256 x 128 at
0.9582. Both have 2048 tiles (97% wave efficiency) and the
same L2 bytes per FLOP; the 256 x 128 tile reads 1/128 + 1/64 instead of 1/256 + 1/64 bytes of shared
memory per FLOP, and ``(1 + c * 0.03516) / (1 + c * 0.03125) = 1.0093 / 0.9582`` gives c = 23.9 with the
unrounded medians (23.2 from the single run of 2026-11-30). It is a weak fit: one pair of medians;
tests/test_v8_tile_model.py refits it from the results file. ``python -m matmul_bench check v8-menu`` times every
candidate and prints each tile's measured cost per FLOP beside the model's.

The menu holds only tiles that fit one block per SM with at least three pipeline stages (a consumer
holds two stages while its last WGMMA is in flight, so with two stages TMA could refill a stage only
after the WGMMA that read it retired: one K-tile ahead at most) and whose
fp32 accumulator leaves room in the registers the launch allows. 192 x 256 with three consumer warp
groups is not on it: three 56 KB stages and its 96 KB of C staging need 264 KB of the 227 KB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SM90_SHARED_BYTES = 227 * 1024  # dynamic shared memory one block may use on sm_90 (232448 bytes)
# The register file is four slices of 16K 32-bit registers, one per SM sub-partition. The launch counts a block's warps
# in multiples of the four (as CUDA's cuda_occupancy.h does), so ceil(warps / 4) warps per slice set the registers
# per thread, whichever sub-partition each warp lands on (NVIDIA does not document that mapping).
REGISTERS_PER_SUBPARTITION = 16 * 1024
SUBPARTITIONS = 4
MAX_REGISTERS_PER_THREAD = 255
H100_SMS = 132  # H100 SXM and H200
BLOCK_K = 64  # fp16 columns per K-tile: 128-byte rows, TMA's widest swizzle (as V7)
CHUNK = 64  # columns of C per staging chunk (as V7)
MIN_STAGES = 3
WGMMA_M = 64  # rows of one WGMMA instruction
# Registers a consumer thread needs besides its accumulator: addresses, loop and pipeline state. The sm_90a builds
# of V8's two-consumer tiles used 29 to 39.
REGISTER_HEADROOM = 40
# With a whole producer warp group, setmaxnreg gives it this many registers per thread and the consumers the rest.
PRODUCER_REGISTERS = 40
# Cost of moving one operand byte (L2 -> shared, or shared -> tensor cores) in FLOPs, fitted as the docstring says.
OPERAND_BYTE_COST = 23.9
# Operand rows start on 32-byte L2 sectors when K is a multiple of this many fp16 elements.
SECTOR_ELEMENTS = 16
# FLOPs of a 128 x 256 tile's main loop per operand byte L2 delivers when rows are off the sectors: fitted as the
# docstring says (4.).
MISALIGNED_FLOP_PER_BYTE = 124.0
# Extra time of a tile of the last column, per (share of it past N)^2, in units of that tile's main loop: fitted to
# V8's edge checks (the docstring says how). A last column 8 of 192 columns wide costs 0.41 of a tile more.
EDGE_COST = 0.45
# V9: which operand a cluster of two blocks shares by TMA multicast ("none": V8's one block per tile, first so that it
# wins ties; "b": a pair of tiles along M shares B; "a": a pair along N shares A).
SHARES = ("none", "b", "a")
# V9: what a cluster adds per FLOP over the same tile without one (the cluster handshake: remote arrives, the pair
# waiting for its slower block), in units of the MMA's time; fitted as the docstring says (5.).
CLUSTER_COST = 0.10


def _register_limit(warps: int) -> int:
    """Registers per thread ptxas may use when every warp of the block is resident (a multiple of 8)."""
    per_subpartition = math.ceil(warps / SUBPARTITIONS)
    return min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SUBPARTITION // (32 * per_subpartition) // 8 * 8)


@dataclass(frozen=True)
class Tile:
    """One output tile shape and how V8 runs it: consumer warp groups split its rows, a ring of stages feeds them."""

    block_m: int
    block_n: int
    consumers: int  # consumer warp groups; each takes block_m / consumers rows of the tile
    num_stages: int

    @property
    def name(self) -> str:
        return f"{self.block_m}x{self.block_n}"

    @property
    def group_m(self) -> int:
        """Rows of the tile per consumer warp group."""
        return self.block_m // self.consumers

    @property
    def config(self) -> dict[str, int]:
        """The kernel's knobs for this tile (matmul_v8.MatmulV8's autotune names)."""
        return {"block_m": self.block_m, "block_n": self.block_n, "consumers": self.consumers,
                "num_stages": self.num_stages}  # fmt: skip

    @property
    def rebalances_registers(self) -> bool:
        """Whether the accumulator needs more registers than the launch allows with a one-warp producer.

        Then the producer is a whole warp group, and setmaxnreg moves registers from it to the consumers.
        """
        return self.accumulator_registers + REGISTER_HEADROOM > _register_limit(self.consumers * 4 + 1)

    @property
    def producer_threads(self) -> int:
        return 128 if self.rebalances_registers else 32

    @property
    def threads(self) -> int:
        return self.consumers * 128 + self.producer_threads

    @property
    def consumer_registers(self) -> int:
        """Registers per consumer thread: the launch's limit, or what setmaxnreg raises it to."""
        if not self.rebalances_registers:
            return _register_limit(self.threads // 32)
        # Per sub-partition: one producer warp at PRODUCER_REGISTERS and one warp of each consumer group.
        spare = REGISTERS_PER_SUBPARTITION // 32 - PRODUCER_REGISTERS
        return min(MAX_REGISTERS_PER_THREAD, spare // self.consumers // 8 * 8)

    @property
    def stage_bytes(self) -> int:
        return (self.block_m + self.block_n) * BLOCK_K * 2

    @property
    def staging_bytes(self) -> int:
        """C staged in fp16 for the TMA store."""
        return self.block_m * self.block_n * 2

    @property
    def shared_bytes(self) -> int:
        """The ring, the staging chunks and two 8-byte mbarriers per stage."""
        return self.num_stages * self.stage_bytes + self.staging_bytes + self.num_stages * 2 * 8

    @property
    def accumulator_registers(self) -> int:
        """fp32 accumulator registers per consumer thread: the group's share of the tile over 128 threads."""
        return self.group_m * self.block_n // 128

    @property
    def l2_bytes_per_flop(self) -> float:
        """Operand bytes TMA brings from L2 per FLOP: (bm + bn) rows of 2 bytes for 2 bm bn FLOPs per K step."""
        return 1 / self.block_m + 1 / self.block_n

    @property
    def shared_bytes_per_flop(self) -> float:
        """Operand bytes WGMMA reads from shared memory per FLOP: 64 + N rows for 2 * 64 * N FLOPs per K step."""
        return 1 / WGMMA_M + 1 / self.block_n

    @property
    def cost_per_flop(self) -> float:
        """Relative time of one FLOP in this tile's steady state: the MMA plus the operand bytes it moves."""
        return 1 + OPERAND_BYTE_COST * (self.l2_bytes_per_flop + self.shared_bytes_per_flop)

    def problems(self) -> list[str]:
        """Why this tile cannot run as V8 does; empty when it can."""
        found = []
        if self.block_m % self.consumers or self.group_m % WGMMA_M:
            found.append(f"{self.block_m} rows do not split into {self.consumers} multiples of {WGMMA_M}")
        if self.block_n % CHUNK or not 0 < self.block_n <= 256:
            found.append(f"block_n {self.block_n}: a WGMMA N of at most 256 and whole {CHUNK}-column chunks of C")
        if self.num_stages < MIN_STAGES:
            found.append(f"{self.num_stages} stages: TMA loads at most one K-tile ahead of a consumer that holds two")
        if self.shared_bytes > SM90_SHARED_BYTES:
            found.append(f"{self.shared_bytes} bytes of shared memory > {SM90_SHARED_BYTES}")
        if self.accumulator_registers + REGISTER_HEADROOM > self.consumer_registers:
            found.append(f"{self.accumulator_registers} accumulator registers + {REGISTER_HEADROOM} "
                         f"> {self.consumer_registers} per consumer thread")  # fmt: skip
        return found


def deepest(block_m: int, block_n: int, consumers: int) -> Tile:
    """The tile with as many stages as shared memory holds next to its C staging."""
    probe = Tile(block_m, block_n, consumers, 0)
    stages = (SM90_SHARED_BYTES - probe.staging_bytes) // (probe.stage_bytes + 2 * 8)
    return Tile(block_m, block_n, consumers, max(stages, 0))


# The menu, V7's tile first (it wins ties). Each takes as many stages as fit: 3, 3, 4, 6 and 3.
CANDIDATES: tuple[Tile, ...] = (
    deepest(128, 256, 2),
    deepest(256, 128, 2),  # each consumer warp group: 128 x 128, two m64n128k16 per K step
    deepest(128, 192, 2),
    deepest(128, 128, 2),
    deepest(192, 192, 3),  # three consumer warp groups of 64 rows
)
# Considered and left off the menu; tile_model.Tile.problems says why.
REJECTED: tuple[Tile, ...] = (deepest(192, 256, 3), deepest(256, 192, 2), deepest(256, 256, 2))
REFERENCE = CANDIDATES[0]


@dataclass(frozen=True)
class Estimate:
    """What the model predicts for one tile on one M x N x K problem with ``num_sms`` SMs."""

    tile: Tile
    m: int
    n: int
    k: int
    num_sms: int
    share: str = "none"  # V9: the operand a cluster of two shares (SHARES); "none" is V8

    @property
    def pair(self) -> tuple[int, int]:
        """Tiles per unit of work along M and N: one tile, or a cluster's pair of tiles along M ("b") or N ("a")."""
        return (2 if self.share == "b" else 1, 2 if self.share == "a" else 1)

    @property
    def cluster_size(self) -> int:
        return self.pair[0] * self.pair[1]

    @property
    def units(self) -> int:
        """Units of work (tiles, or pairs of tiles), counting a pair whose second tile lies wholly past M or N."""
        pair_m, pair_n = self.pair
        rows, columns = math.ceil(self.m / self.tile.block_m), math.ceil(self.n / self.tile.block_n)
        return math.ceil(rows / pair_m) * math.ceil(columns / pair_n)

    @property
    def slots(self) -> int:
        """Units that run at once: one per SM, or one per cluster of whole clusters."""
        return self.num_sms // self.cluster_size

    @property
    def tiles(self) -> int:
        """Output tiles, counting the partial ones at the M and N edges."""
        return math.ceil(self.m / self.tile.block_m) * math.ceil(self.n / self.tile.block_n)

    @property
    def waves(self) -> float:
        return self.units / self.slots

    @property
    def rounds(self) -> int:
        """Tiles the busiest block computes (units: a block computes one tile of each pair)."""
        return math.ceil(self.units / self.slots)

    @property
    def wave_efficiency(self) -> float:
        """Fraction of the rounds x slots unit slots that hold a unit (the last wave's emptiness shows here)."""
        return self.units / (self.rounds * self.slots)

    @property
    def fill(self) -> float:
        """Useful fraction of the work the SMs do: wave efficiency times the tiles' share inside C."""
        busy_sms = self.slots * self.cluster_size
        return self.m * self.n / (self.rounds * busy_sms * self.tile.block_m * self.tile.block_n)

    @property
    def l2_bytes_per_flop(self) -> float:
        """Operand bytes per FLOP that cross from L2 to the SMs: a pair loads its shared tile once."""
        pair_m, pair_n = self.pair
        rows = pair_m * self.tile.block_m + pair_n * self.tile.block_n
        return rows / (pair_m * pair_n * self.tile.block_m * self.tile.block_n)

    @property
    def cost_per_flop(self) -> float:
        """The tile's cost per FLOP (V8) with the L2 bytes a pair saves taken off, plus the cluster's own cost."""
        saved = self.tile.l2_bytes_per_flop - self.l2_bytes_per_flop
        return self.tile.cost_per_flop - OPERAND_BYTE_COST * saved + (CLUSTER_COST if self.cluster_size > 1 else 0.0)

    @property
    def edge_empty(self) -> float:
        """Share of the last column of tiles that lies past N (0 when block_n divides N)."""
        return -self.n % self.tile.block_n / self.tile.block_n

    @property
    def edge_rounds(self) -> float:
        """What the last column's tiles add to the busiest block, in tiles: EDGE_COST x edge_empty^2 times
        ceil(edge tiles / SMs), as if the column's tiles were spread evenly over the blocks. Inside a raster group
        consecutive tiles of a column go to different blocks, but the groups can hand one block several: at
        5000 x 3000 with 128 x 192, blocks 108 to 111 compute three of the 40. The model does not count those
        (tests/test_v8_tile_model.py counts them exactly and finds the same choices)."""
        edge_tiles = math.ceil(self.m / self.tile.block_m)
        return EDGE_COST * self.edge_empty**2 * math.ceil(edge_tiles / self.num_sms)

    @property
    def time(self) -> float:
        """Predicted time in units of one 128 x 256 tile's main loop at the reference cost per FLOP."""
        area = self.tile.block_m * self.tile.block_n / (REFERENCE.block_m * REFERENCE.block_n)
        steady = (self.rounds + self.edge_rounds) * area * self.cost_per_flop / REFERENCE.cost_per_flop
        return max(steady, self.l2_bound)

    @property
    def loaded_bytes(self) -> int:
        """Operand bytes all tiles load from L2, rows past M and N left out (TMA does not read them); a pair loads
        its shared tile once."""
        pair_m, pair_n = self.pair
        columns, rows = math.ceil(self.n / self.tile.block_n), math.ceil(self.m / self.tile.block_m)
        return 2 * self.k * (math.ceil(columns / pair_n) * self.m + math.ceil(rows / pair_m) * self.n)

    @property
    def l2_bound(self) -> float:
        """The time L2 takes to deliver the operands when their rows are off the 32-byte sectors (0 when they are on
        them), in the units of :attr:`time`: a fitted rate, not a bound."""
        if self.k % SECTOR_ELEMENTS == 0:
            return 0.0
        reference_flops = 2 * REFERENCE.block_m * REFERENCE.block_n * self.k
        return self.loaded_bytes * MISALIGNED_FLOP_PER_BYTE / (reference_flops * self.num_sms)


def _check_problem(m: int, n: int, k: int, num_sms: int) -> None:
    for name, value in (("M", m), ("N", n), ("K", k), ("num_sms", num_sms)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def estimate(tile: Tile, m: int, n: int, k: int, num_sms: int = H100_SMS, share: str = "none") -> Estimate:
    """The model's numbers for ``tile`` (in clusters sharing ``share``) on an M x N x K problem with ``num_sms`` SMs."""
    _check_problem(m, n, k, num_sms)
    if share not in SHARES:
        raise ValueError(f"share must be one of {SHARES}, got {share!r}")
    return Estimate(tile, m, n, k, num_sms, share)


def estimates(m: int, n: int, k: int, num_sms: int = H100_SMS,
              candidates: tuple[Tile, ...] = CANDIDATES) -> list[Estimate]:  # fmt: skip
    """Every candidate's estimate, in menu order."""
    return [estimate(tile, m, n, k, num_sms) for tile in candidates]


def choose(m: int, n: int, k: int, num_sms: int = H100_SMS, candidates: tuple[Tile, ...] = CANDIDATES) -> Tile:
    """The candidate with the smallest predicted time on M x N x K (the earliest on a tie)."""
    if not candidates:
        raise ValueError("no candidate tiles")
    found = estimates(m, n, k, num_sms, candidates)
    best = min(range(len(found)), key=lambda i: (round(found[i].time, 9), i))
    return found[best].tile


def estimates_shared(m: int, n: int, k: int, num_sms: int = H100_SMS) -> list[Estimate]:
    """V9's menu: every candidate tile with every sharing, in menu order (no cluster first)."""
    return [
        estimate(tile, m, n, k, num_sms, share)
        for tile in CANDIDATES
        for share in SHARES
        if share != "a" or tile.consumers == 2
    ]  # a shared A tile is loaded as the two consumer groups' slabs


def choose_shared(m: int, n: int, k: int, num_sms: int = H100_SMS) -> Estimate:
    """V9's choice: the (tile, sharing) with the smallest predicted time on M x N x K (the earliest on a tie)."""
    found = estimates_shared(m, n, k, num_sms)
    return min(found, key=lambda e: round(e.time, 9))
