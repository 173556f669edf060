"""Results: what a run leaves behind and how runs are compared. Result files (``result.json``,
``arrays.npz``, a protocol's own file), headline figures, the SQLite run store, the comparison and its
rank test, hardware normalisation, console and markdown summaries. Knows no protocol's registry: the
room above (``streambench.harness.runs``) tells it what a run directory holds."""
