"""The one timing loop (common.time_loop) on a simulated GPU: warm-up, flushed and timed calls, span, busy share;
the interleaved rounds and their paired ratio; the benchmark's worker timing through it (runs on CPU)."""

from __future__ import annotations

from typing import Any

import pytest

from matmul_bench import worker
from matmul_bench.kernels import load

common = load("common")


class SimulatedGpu:
    """The timing loop's pieces on one simulated clock in seconds: the host waits for every step (no queue), a flush
    takes ``flush_s``, a kernel its own time; it counts the calls made between two synchronizations."""

    def __init__(self, flush_s: float = 0.25e-3) -> None:
        self.now, self.flush_s = 100.0, flush_s
        self.flushes, self.batches, self.calls_since_sync = 0, [], 0

    def clock(self) -> float:
        return self.now

    def flush(self) -> None:
        self.now += self.flush_s
        self.flushes += 1

    def synchronize(self) -> None:
        self.batches.append(self.calls_since_sync)
        self.calls_since_sync = 0

    def event(self) -> SimulatedEvent:
        return SimulatedEvent(self)

    def kernel(self, seconds: float) -> Any:
        def call() -> None:
            self.now += seconds
            self.calls_since_sync += 1

        return call


class SimulatedEvent:
    def __init__(self, gpu: SimulatedGpu) -> None:
        self.gpu, self.at = gpu, None

    def record(self) -> None:
        self.at = self.gpu.now

    def elapsed_time(self, other: SimulatedEvent) -> float:
        assert self.at is not None and other.at is not None, "an event read before it was recorded"
        return (other.at - self.at) * 1e3


def test_the_loop_warms_up_for_its_seconds_then_times_each_flushed_call() -> None:
    gpu = SimulatedGpu()
    began = gpu.now
    timed = common.time_loop(gpu.kernel(2e-3), warmup_s=1.0, repeats=7, timer=gpu)
    assert timed.ms == pytest.approx(2.0) and timed.times == pytest.approx((2.0,) * 7)
    assert timed.starts == pytest.approx([i * 2.25 for i in range(7)])  # a flush, then the call, each time
    warm_calls = gpu.flushes - 7
    assert 1.0 <= warm_calls * 2.25e-3 < 1.0 + 0.03  # at least the warm-up's seconds, at most one batch more
    assert timed.span == pytest.approx((began + 0.5, gpu.now))  # from the warm-up's midpoint to the last call's end
    assert timed.busy == pytest.approx(7 * 2.0 / (7 * 2.25 - 0.25))  # the first flush is before the window


def test_the_warm_up_syncs_in_batches_of_about_20_ms() -> None:
    gpu = SimulatedGpu(flush_s=0.0)
    common.time_loop(gpu.kernel(2**-10), warmup_s=0.5, repeats=3, timer=gpu)  # 1/1024 s: 20.48 calls in 20 ms
    *warm, timed = gpu.batches
    assert warm[0] == 1 and timed == 3  # one call to learn the rate, and the timed calls alone after the last sync
    assert all(batch == 20 for batch in warm[1:]) and 0.5 <= sum(warm) * 2**-10 < 0.52


def test_a_batch_fills_20_ms_at_the_last_rate_within_bounds() -> None:
    assert common.next_batch(1, 1e-3) == 20
    assert common.next_batch(10, 0.04) == 5
    assert common.next_batch(4, 1.0) == 1  # a slow call: one per batch, never none
    assert common.next_batch(1, 0.0) == 10_000  # a call faster than the clock: capped


def test_a_zero_warm_up_still_runs_the_loop_once_before_timing() -> None:
    gpu = SimulatedGpu()
    timed = common.time_loop(gpu.kernel(1e-3), warmup_s=0.0, repeats=2, timer=gpu)
    assert gpu.flushes == 3 and len(timed.times) == 2


def test_timed_calls_alone_have_no_warm_up_and_start_their_span_at_the_anchor() -> None:
    gpu = SimulatedGpu()
    began = gpu.now
    timed = common.timed_calls(gpu.kernel(1e-3), 4, gpu)
    assert gpu.flushes == 4 and timed.span == pytest.approx((began, began + 4 * 1.25e-3))


def test_rounds_alternate_the_order_and_the_ratio_pairs_each_round(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = SimulatedGpu()
    calls = {"ours": gpu.kernel(3e-3), "cublas": gpu.kernel(1e-3)}
    names, turns, loop = {id(c): n for n, c in calls.items()}, [], common.time_loop

    def recorded(call: Any, *args: Any) -> Any:
        turns.append(names[id(call)])
        return loop(call, *args)

    monkeypatch.setattr(common, "time_loop", recorded)
    ms = common.interleaved(calls, rounds=3, warmup_s=0.1, repeats=5, timer=gpu)
    assert turns == ["ours", "cublas", "cublas", "ours", "ours", "cublas"]
    assert ms == {"ours": pytest.approx([3.0] * 3), "cublas": pytest.approx([1.0] * 3)}
    assert common.paired_ratio(ms["cublas"], ms["ours"]) == pytest.approx(1 / 3)


def test_the_paired_ratio_is_the_median_of_each_round_s_ratio_not_a_ratio_of_medians() -> None:
    baseline, ours = [1.0, 2.0, 3.0], [3.0, 2.0, 4.0]  # per-round ratios 1/3, 1, 3/4
    assert common.paired_ratio(baseline, ours) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        common.paired_ratio(baseline, ours[:2])  # rounds missing on one side cannot be paired


def test_the_benchmark_times_through_the_common_loop_with_its_span_from_the_warm_up_midpoint() -> None:
    gpu = SimulatedGpu()
    backend = worker.CudaBackend()
    backend.timer = gpu
    began = gpu.now
    prepared = worker.Prepared(gpu.kernel(1.5e-3), {}, None, lambda shape: {})
    timing = backend.time_ms(prepared, warmup_s=0.2, repeats=10)
    assert timing.ms == pytest.approx(1.5) and timing.busy == pytest.approx(15 / (10 * 1.75 - 0.25))
    assert timing.span == pytest.approx((began + 0.1, gpu.now))
