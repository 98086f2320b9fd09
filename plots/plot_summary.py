"""Overview chart: V0-V6 and cuBLAS, with cuBLAS and the published dense FP16 peak as reference lines."""

import chartlib

chartlib.summary_chart()
