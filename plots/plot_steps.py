"""Closing page chart: what each step of the ladder bought, a waterfall of paired step ratios with their intervals."""

from matmul_site import charts

charts.steps_chart()
