"""Chapter V4 chart (two consumer warp groups, raster order): all versions, V4 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v4")
