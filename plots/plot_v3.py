"""Chapter V3 chart (warp specialization): every version's TFLOPS with V3 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v3")
