"""The keyword spotter of examples/kws: a small torch model for ``--adapter torch-module`` (state mode),
built by :func:`build` from the data's classes and payload sizes (streambench offers both to a factory whose
signature names them)."""

from examples.kws.spotter.models import KeywordSpotter, build

__all__ = ["KeywordSpotter", "build"]
