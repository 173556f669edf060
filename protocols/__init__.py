"""streambench's ``protocols`` floor, installed as ``streambench.protocols`` (DESIGN.md "Layout")."""

if __name__ != "streambench.protocols":  # imported as a top-level package: a source tree on sys.path
    raise ModuleNotFoundError(
        f"{__name__!r} is streambench's import path before 0.2: the package is now 'streambench.protocols' "
        "(adapter authors: from streambench import StreamingAdapter, Frame, Prediction, AdapterInfo, "
        "AdapterOptions)",
        name=__name__,
    )
