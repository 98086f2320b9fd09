"""Chapter V1 chart (WGMMA from shared memory): every version's TFLOPS with V1 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v1")
