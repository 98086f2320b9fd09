"""Chapter V2 chart (the multi-stage pipeline): every version's TFLOPS with V2 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v2")
