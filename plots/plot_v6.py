"""Chapter V6 chart (the persistent kernel): every version's TFLOPS with V6 highlighted, from the results file."""

import chartlib

chartlib.version_chart("v6")
