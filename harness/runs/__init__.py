"""Runs: the protocols as the harness executes them. One interface
(:mod:`streambench.harness.runs.interface`), one module per protocol implementing it, and one registry
(:mod:`streambench.harness.runs.registry`) that the command line, the sweep, the run store and the report
iterate; :mod:`streambench.harness.runs.catalog` reads a run directory through the registry (headline, index,
report bundle)."""
