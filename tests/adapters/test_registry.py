"""The adapter registry: lazy short names, module:Class paths, helpful errors, data-bound options."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from streambench.adapters import registry
from streambench.adapters.contract import AdapterInfo, AdapterOptions, Frame, Prediction, StreamingAdapter
from streambench.adapters.registry import REGISTRY, AdapterLoadError, create_adapter, resolve


class _Opts(AdapterOptions):
    classes: tuple[str, ...] | None = None
    gain: float = 1.0


class _Toy(StreamingAdapter):
    Options = _Opts

    @property
    def info(self) -> AdapterInfo:
        assert isinstance(self.options, _Opts)
        return AdapterInfo(name="toy", classes=self.options.classes or ("a",), modalities=("x",))

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> Prediction | None:
        return None


@pytest.fixture
def toy_module(monkeypatch: pytest.MonkeyPatch) -> str:
    module = types.ModuleType("toy_adapters")
    module._Toy = _Toy  # type: ignore[attr-defined]
    module.not_a_class = 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_adapters", module)
    return "toy_adapters"


def test_registry_is_lazy_and_resolves_short_names() -> None:
    assert all(":" in target for target in registry.REGISTRY.values())
    assert {"reference", "reference-lookahead", "null"} <= set(registry.REGISTRY)
    assert resolve("null").__name__ == "NullAdapter"


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(AdapterLoadError, match=r"unknown adapter 'refrence'\. Did you mean 'reference'"):
        resolve("refrence")
    with pytest.raises(AdapterLoadError) as info:
        resolve("zzz")
    listed = str(info.value).split("Known adapters: ")[1].split(";")[0].split(", ")
    assert listed == sorted(REGISTRY)
    assert {"busywait", "null", "reference", "reference-lookahead"} <= set(listed)


def test_module_class_paths(toy_module: str) -> None:
    assert resolve(f"{toy_module}:_Toy") is _Toy
    with pytest.raises(AdapterLoadError, match=r"has no attribute '_Tyo'\. Did you mean '_Toy'"):
        resolve(f"{toy_module}:_Tyo")
    with pytest.raises(AdapterLoadError, match="cannot import module 'no_such_module_xyz'"):
        resolve("no_such_module_xyz:Model")
    with pytest.raises(AdapterLoadError, match="is not a class"):
        resolve(f"{toy_module}:not_a_class")


def test_options_are_validated_and_data_bound_ones_filled(toy_module: str) -> None:
    adapter = create_adapter(f"{toy_module}:_Toy", {"gain": 2}, data_bound={"classes": ("p", "q")})
    assert adapter.info.classes == ("p", "q")
    explicit = create_adapter(f"{toy_module}:_Toy", {"classes": ["z"]}, data_bound={"classes": ("p", "q")})
    assert explicit.info.classes == ("z",)
    with pytest.raises(AdapterLoadError, match="gain"):
        create_adapter(f"{toy_module}:_Toy", {"gain": "loud"})
    with pytest.raises(AdapterLoadError, match="volume"):
        create_adapter(f"{toy_module}:_Toy", {"volume": 3})


def test_objects_without_the_interface_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("not_adapters")

    class Nope:
        pass

    module.Nope = Nope  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "not_adapters", module)
    with pytest.raises(AdapterLoadError, match="lacks the adapter interface"):
        create_adapter("not_adapters:Nope")
    with pytest.raises(AdapterLoadError, match="takes no options"):
        create_adapter("not_adapters:Nope", {"x": 1})


def test_a_module_in_the_current_directory_is_found_as_python_m_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17: the README's `--adapter my_adapter:LoudnessAdapter` from the directory holding
    my_adapter.py. A console script's sys.path starts at its own directory, not the user's."""
    (tmp_path / "cwd_only_adapter_mod.py").write_text(
        "from streambench.adapters.null import NullAdapter\n\nclass Mine(NullAdapter):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert resolve("cwd_only_adapter_mod:Mine").__name__ == "Mine"
    with pytest.raises(AdapterLoadError, match="cannot import module 'no_such_mod_anywhere'"):
        resolve("no_such_mod_anywhere:X")


def test_an_option_typo_names_the_option_its_neighbour_and_the_valid_ones() -> None:
    with pytest.raises(AdapterLoadError, match=r"has no option 'clases'\. Did you mean 'classes'\?") as info:
        create_adapter("null", {"clases": ["a"]})
    assert "Its options: classes" in str(info.value) and "https://errors.pydantic.dev" not in str(info.value)
    with pytest.raises(AdapterLoadError) as bad:
        create_adapter("reference-lookahead", {"lookahead_frames": "many"})
    assert "lookahead_frames" in str(bad.value) and "pydantic.dev" not in str(bad.value)


def test_a_comma_list_fills_a_list_option() -> None:
    adapter = create_adapter("null", {"classes": "a,b , c"})
    assert adapter.info.classes == ("a", "b", "c")


def test_streambench_adapters_name_lists_the_options() -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    done = CliRunner().invoke(app, ["adapters", "reference-lookahead"])
    assert done.exit_code == 0, done.output
    assert "lookahead_frames" in done.output and "data-bound" in done.output
    wrong = CliRunner().invoke(app, ["adapters", "torch-modul"])
    assert wrong.exit_code == 2 and "Did you mean 'torch-module'" in wrong.output


class _Exits(_Toy):
    def __init__(self, options: _Opts | None = None) -> None:
        super().__init__(options)
        sys.exit(1)  # a model's constructor that ends its process's interpreter


class _BadInfo(_Toy):
    @property
    def info(self) -> AdapterInfo:
        raise ValueError("no info today")


def test_a_constructor_that_exits_and_an_info_that_raises_are_load_errors_naming_the_adapter(
    toy_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[toy_module], "_Exits", _Exits, raising=False)
    monkeypatch.setattr(sys.modules[toy_module], "_BadInfo", _BadInfo, raising=False)
    with pytest.raises(
        AdapterLoadError, match=r"adapter 'toy_adapters:_Exits': _Exits\(\) failed: SystemExit: 1 \("
    ):
        create_adapter(f"{toy_module}:_Exits")
    with pytest.raises(
        AdapterLoadError,
        match=r"adapter 'toy_adapters:_BadInfo': _BadInfo\.info failed: ValueError: no info today",
    ):
        create_adapter(f"{toy_module}:_BadInfo")
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C while a model is built is no load error
        registry._construct("x", _raises(KeyboardInterrupt()), ())


def _raises(exc: BaseException) -> type:
    class Raises:
        def __init__(self) -> None:
            raise exc

    return Raises
