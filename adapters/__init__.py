"""streambench's ``adapters`` floor, installed as ``streambench.adapters`` (DESIGN.md "Layout")."""

if __name__ != "streambench.adapters":  # imported as a top-level package: a source tree on sys.path
    raise ModuleNotFoundError(
        f"{__name__!r} is streambench's import path before 0.2: the package is now 'streambench.adapters' "
        "(adapter authors: from streambench import StreamingAdapter, Frame, Prediction, AdapterInfo, "
        "AdapterOptions)",
        name=__name__,
    )
