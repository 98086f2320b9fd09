"""Sweep chart: TFLOPS against problem shape for V4-V6, cuBLAS and torch.compile (max-autotune)."""

from matmul_site import charts

charts.sweep_chart()
