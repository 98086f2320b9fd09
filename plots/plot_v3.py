"""Chapter V3 chart (warp specialization): every version's TFLOPS with V3 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v3")
