"""Chapter V2 chart (the multi-stage pipeline): every version's TFLOPS with V2 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v2")
