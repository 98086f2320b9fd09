"""The replicated ladder: each run's median and the merged interval, per step and per version (method page)."""

from matmul_site import charts

charts.replication_chart()
