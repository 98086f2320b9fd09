"""A ring of shared-memory stages between one TMA producer and several consumer warp groups.

Each stage has two mbarriers:

- ``full[s]`` completes when TMA has delivered every byte of stage ``s``: the
  producer arms it with the byte count (one arrival), and the TMA engine's
  ``complete_tx`` counts the bytes down. Consumers wait on it before reading.
- ``empty[s]`` completes when every consumer warp group has finished reading
  stage ``s``: one elected thread per group arrives, so it expects
  ``num_consumers`` arrivals. The producer waits on it before refilling.

An mbarrier has a phase bit that flips each time it completes, and a wait names the
parity of the phase it waits for. Each side walks the ring with a stage index, and
its phase bit flips when the index wraps around to stage 0. The producer starts
with parity 1: waiting for parity 1 on a fresh barrier (phase 0 running) returns
at once, which is exactly "every slot starts empty".

Consumers release stages in the order they acquired them, so the pipeline keeps a
third index, the oldest stage still held. A consumer that keeps one WGMMA group in
flight (V5) acquires stage k+1 before it releases stage k; the release index lags
by one without any extra bookkeeping in the kernel.

The state (indices and phase bits) lives in registers of every thread; each role
only ever touches its own part.
"""

import tilus
from tilus import int32, uint32


class Pipeline(tilus.Class):
    def __init__(self, num_stages: int, num_consumers: int):
        self.num_stages: int = num_stages
        # full[s]: one arrival (the producer arming the byte count) plus the TMA bytes.
        self.full = self.mbarrier.alloc(counts=[1] * num_stages)
        # empty[s]: one arrival per consumer warp group.
        self.empty = self.mbarrier.alloc(counts=[num_consumers] * num_stages)
        self.producer_stage: int32 = 0
        # Parity 1 on a fresh barrier passes at once: every slot starts empty.
        self.producer_phase: uint32 = 1
        self.consumer_stage: int32 = 0
        # Parity 0: the first fill of each slot.
        self.consumer_phase: uint32 = 0
        # The oldest stage a consumer still holds (released in acquisition order).
        self.release_stage: int32 = 0

    def producer_acquire(self, transaction_bytes: int):
        """Wait for a free slot, arm its full barrier with the bytes TMA will bring; return the slot."""
        stage: int32 = self.producer_stage
        # Wait until every consumer group has released this slot's previous contents.
        self.mbarrier.wait(self.empty[stage], phase=self.producer_phase)
        # One thread arrives and announces the bytes; the barrier completes when TMA has delivered them all.
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(self.full[stage], transaction_bytes=transaction_bytes)
        # Next slot; wrapping around to slot 0 flips the phase this side waits for.
        self.producer_stage = stage + 1
        if self.producer_stage == self.num_stages:
            self.producer_stage = 0
            self.producer_phase = self.producer_phase ^ 1
        return stage

    def consumer_acquire(self):
        """Wait until TMA has filled the next slot; return the slot to read."""
        stage: int32 = self.consumer_stage
        self.mbarrier.wait(self.full[stage], phase=self.consumer_phase)
        self.consumer_stage = stage + 1
        if self.consumer_stage == self.num_stages:
            self.consumer_stage = 0
            self.consumer_phase = self.consumer_phase ^ 1
        return stage

    def consumer_release(self):
        """Hand the oldest held slot back to the producer: one elected arrival per consumer warp group.

        Call it only once the WGMMAs that read the slot have retired (wgmma.wait_group). By the PTX ISA's wording a
        wait covers the executing warp's share (V1's note); one arrival for the whole group relies on the group's
        MMAs retiring together, as CUTLASS's PipelineTmaAsync also does.
        """
        with self.single_thread():
            self.mbarrier.arrive(self.empty[self.release_stage])
        self.release_stage = self.release_stage + 1
        if self.release_stage == self.num_stages:
            self.release_stage = 0


class ClusterPipeline(Pipeline):
    """The ring of a block in a cluster whose blocks multicast into each other's stages (V9).

    A peer's TMA writes into this block's stage too, so a stage may be refilled only when the consumer warp groups of
    every block of the cluster have read it: ``empty[s]`` expects ``num_consumers * cluster_size`` arrivals, and each
    group releases a stage in every block of the cluster (a remote arrive, through the peer's shared-memory window).
    """

    def __init__(self, num_stages: int, num_consumers: int, cluster_size: int):
        super().__init__(num_stages, num_consumers * cluster_size)
        self.cluster_size: int = cluster_size

    def consumer_release(self):
        """Release the oldest held slot in every block of the cluster: one elected arrival per group and block.

        Released at CTA scope (the PTX default, as CUTLASS's cluster barrier arrives): at cluster scope, Tilus's
        default for a remote arrive, ptxas puts MEMBAR.ALL.CTA and MEMBAR.ALL.GPU before each arrive, in every K-tile.
        A CTA-scope release orders nothing of this block for the peer, and nothing needs to be: what comes before
        the arrive is the WGMMAs' reads of the slot, which wgmma.wait_group has already retired, and this block
        publishes no data to the peer through the barrier (the peer's next writes to the slot are its own TMA's).
        """
        with self.single_thread():
            # Tilus 0.2.0 has no remote plain arrive; an arrive that expects 0 more bytes is one.
            for rank in range(self.cluster_size):
                self.mbarrier.arrive_and_expect_tx_remote(
                    self.empty[self.release_stage], transaction_bytes=0, target_rank=rank, scope="cta"
                )
        self.release_stage = self.release_stage + 1
        if self.release_stage == self.num_stages:
            self.release_stage = 0
