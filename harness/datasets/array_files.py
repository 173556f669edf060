"""Per-frame arrays of one or more streams in ``.npy``, ``.npz`` and HDF5 files, read lazily (the readers of
:mod:`streambench.harness.datasets.feature_arrays`).

- ``.npy``: one stream, one array ``[T, ...]`` (numpy's format, read with :func:`numpy.load`), under the
  name the caller gives (the modality);
- ``.npz``: one stream, a dict of arrays (:func:`numpy.savez`), each under its key;
- ``.h5`` / ``.hdf5``: the datasets at the file's top level are one stream; a file whose top level holds
  only groups has one stream per group (its name), each group a dict of datasets (h5py).

:func:`array_streams` lists a file's streams with each array's shape, reading headers only (numpy's
format header, h5py's dataset shapes); :meth:`ArrayStream.load` reads one array when asked. Every error is
an :class:`ArrayFileError` naming the file, the group and the array key.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ARRAY_SUFFIXES", "ArrayFileError", "ArrayStream", "array_streams"]

ARRAY_SUFFIXES = (".npy", ".npz", ".h5", ".hdf5")
"""The file types read: numpy's ``.npy`` and ``.npz``, and HDF5."""


class ArrayFileError(ValueError):
    """An array file that cannot be used, naming the file (and the group and key where one is at fault)."""

    def __init__(self, path: str | os.PathLike[str], problem: str, key: str | None = None) -> None:
        self.path = Path(path)
        self.key = key
        super().__init__(f"{os.fspath(path)}: " + (f"array {key!r}: " if key is not None else "") + problem)


def _h5py() -> Any:
    """The ``h5py`` module (an optional dependency: ``pip install 'streambench[data]'``)."""
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise ImportError(
            "HDF5 feature files need the h5py package: pip install 'streambench[data]'"
        ) from exc
    return h5py


@dataclass(frozen=True)
class ArrayStream:
    """One stream's arrays in ``path`` (``group``: its HDF5 group, None at the file's top level), each
    array's shape by key in the file's order, and how to read one."""

    stream_id: str
    path: Path
    group: str | None
    shapes: dict[str, tuple[int, ...]]
    bare_key: str | None = None
    """The name a ``.npy`` file's single array is given (None for the other formats)."""

    @property
    def where(self) -> str:
        """The file, and the group where there is one, as errors name them."""
        return f"{self.path}:{self.group}" if self.group is not None else os.fspath(self.path)

    def load(self, key: str) -> np.ndarray:
        """The array ``key`` read whole; :class:`ArrayFileError` when it cannot be read."""
        try:
            if self.path.suffix.lower() == ".npy":
                return np.asarray(np.load(self.path, allow_pickle=False))
            if self.path.suffix.lower() == ".npz":
                with np.load(self.path, allow_pickle=False) as archive:
                    return np.asarray(archive[key])
            with _h5py().File(self.path, "r") as handle:
                node = handle if self.group is None else handle[self.group]
                return np.asarray(node[key][()])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise ArrayFileError(self.where, f"cannot be read ({exc})", key) from None


def _npy_shape(path: Path) -> tuple[int, ...]:
    try:
        return tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
    except (OSError, ValueError) as exc:
        raise ArrayFileError(path, f"cannot be read as a .npy array ({exc})") from None


def _npz_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Each member's shape from its numpy header, in the archive's order, without reading the data."""
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if not member.endswith(".npy"):
                    continue
                with archive.open(member) as handle:
                    version = np.lib.format.read_magic(handle)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, _ = read(handle)
                shapes[member[: -len(".npy")]] = tuple(int(n) for n in shape)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ArrayFileError(path, f"cannot be read as a .npz archive ({exc})") from None
    if not shapes:
        raise ArrayFileError(path, "holds no array")
    return shapes


def _h5_streams(path: Path) -> list[ArrayStream]:
    h5py = _h5py()
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise ArrayFileError(path, f"cannot be read as HDF5 ({exc})") from None
    with handle:
        groups = [name for name, node in handle.items() if isinstance(node, h5py.Group)]
        datasets = {
            name: tuple(node.shape) for name, node in handle.items() if isinstance(node, h5py.Dataset)
        }
        if groups and datasets:
            raise ArrayFileError(
                path,
                f"holds both datasets ({', '.join(datasets)}) and groups ({', '.join(groups)}) at its top "
                "level: one stream of datasets, or one stream per group, not both",
            )
        if datasets:
            return [ArrayStream(path.stem, path, None, datasets)]
        found = []
        for name in groups:
            inner = handle[name]
            nested = [key for key, node in inner.items() if not isinstance(node, h5py.Dataset)]
            if nested:
                problem = f"holds groups ({', '.join(nested)}); a stream's group holds datasets only"
                raise ArrayFileError(f"{path}:{name}", problem)
            shapes = {key: tuple(node.shape) for key, node in inner.items()}
            if not shapes:
                raise ArrayFileError(f"{path}:{name}", "holds no dataset")
            found.append(ArrayStream(name, path, name, shapes))
        if not found:
            raise ArrayFileError(path, "holds no dataset")
        return found


def array_streams(path: Path, bare_key: str) -> list[ArrayStream]:
    """The streams of one file (module docstring); a ``.npy`` file's array is named ``bare_key``."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ArrayFileError(path, "does not exist")
    if suffix == ".npy":
        return [ArrayStream(path.stem, path, None, {bare_key: _npy_shape(path)}, bare_key)]
    if suffix == ".npz":
        return [ArrayStream(path.stem, path, None, _npz_shapes(path))]
    if suffix in (".h5", ".hdf5"):
        return _h5_streams(path)
    raise ArrayFileError(path, f"is not an array file ({', '.join(ARRAY_SUFFIXES)})")
