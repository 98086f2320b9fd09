"""V9's chart: the field set, each shape's V8, V9 and peers against the cuBLAS of the same rounds, by half."""

from matmul_site import charts

charts.field_chart()
