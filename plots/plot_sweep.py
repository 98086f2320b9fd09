"""Sweep chart: TFLOPS against problem shape for the last three versions, cuBLAS and torch.compile (max-autotune)."""

from matmul_site import charts

charts.sweep_chart()
