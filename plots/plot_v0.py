"""Chapter V0 chart (TMA + mma.sync): every version's TFLOPS with V0 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v0")
