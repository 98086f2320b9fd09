"""Chapter V7 chart (an epilogue without bank conflicts): every version's TFLOPS with V7 highlighted."""

from matmul_site import charts

charts.version_chart("v7")
