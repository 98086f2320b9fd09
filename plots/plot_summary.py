"""Overview chart: every version and cuBLAS, with cuBLAS and the published dense FP16 peak as reference lines."""

from matmul_site import charts

charts.summary_chart()
