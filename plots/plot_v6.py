"""Chapter V6 chart (the persistent kernel): every version's TFLOPS with V6 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v6")
