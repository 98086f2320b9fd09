"""Overview chart: V0-V6 and cuBLAS, with cuBLAS and the published dense FP16 peak as reference lines."""

from matmul_site import charts

charts.summary_chart()
