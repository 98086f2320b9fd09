"""Chapter V1 chart (WGMMA from shared memory): every version's TFLOPS with V1 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v1")
