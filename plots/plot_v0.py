"""Chapter V0 chart (TMA + mma.sync): every version's TFLOPS with V0 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v0")
