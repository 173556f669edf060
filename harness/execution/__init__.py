"""Execution: how a model is run. The frame loop (engine), the executor that feeds it a protocol's plan
with a failure policy, the isolated worker and its limits, the event log that keeps every finished
stream, the run configuration, and the adapter errors. Imports io, instruments and datasets only."""
