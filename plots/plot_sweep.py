"""Sweep chart: TFLOPS against problem shape for V4-V6, cuBLAS and torch.compile (max-autotune)."""

import chartlib

chartlib.sweep_chart()
