"""Chapter V5 chart (WGMMA kept in flight): every version's TFLOPS with V5 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v5")
