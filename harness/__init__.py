"""streambench's ``harness`` floor, installed as ``streambench.harness`` (DESIGN.md "Layout")."""

if __name__ != "streambench.harness":  # imported as a top-level package: a source tree on sys.path
    raise ModuleNotFoundError(
        f"{__name__!r} is streambench's import path before 0.2: the package is now 'streambench.harness' "
        "(adapter authors: from streambench import StreamingAdapter, Frame, Prediction, AdapterInfo, "
        "AdapterOptions)",
        name=__name__,
    )
