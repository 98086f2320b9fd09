"""Chapter V4 chart (two consumer warp groups, raster order): all versions, V4 highlighted, from the results file."""

from matmul_site import charts

charts.version_chart("v4")
