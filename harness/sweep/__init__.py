"""Sweeps: a sweep file expanded into stably identified runs (spec), which of them the store holds
already (state), the executors that run them (local, Ray) and the sweep report."""
