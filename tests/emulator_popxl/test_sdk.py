"""profcompare.sdk: choosing between the real SDK and the simulator."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

import pytest

from profcompare import sdk
from profcompare.errors import ProfcompareError, SdkUnavailableError


@pytest.fixture
def no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name in ("popxl", "popxl_addons") else real(name, *args)

    monkeypatch.setattr(sdk.importlib.util, "find_spec", find_spec)


@pytest.fixture
def fake_sdk(monkeypatch: pytest.MonkeyPatch) -> dict[str, types.ModuleType]:
    popxl = types.ModuleType("popxl")
    popxl.__path__ = []  # a package, so popxl.ops can be imported
    ops = types.ModuleType("popxl.ops")
    addons = types.ModuleType("popxl_addons")
    modules = {"popxl": popxl, "popxl.ops": ops, "popxl_addons": addons}
    for name, module in modules.items():
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        monkeypatch.setitem(sys.modules, name, module)
    return modules


def test_auto_without_sdk_is_the_simulator(no_sdk: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sdk.ENV_VAR, raising=False)
    assert not sdk.sdk_available()
    assert sdk.resolve_backend() == "sim"
    backend = sdk.load()
    assert backend.name == "sim" and backend.simulated
    assert backend.popxl.__name__ == "profcompare.emulator.popxl"
    assert backend.ops.__name__ == "profcompare.emulator.popxl.ops"
    assert backend.addons.__name__ == "profcompare.emulator.popxl_addons"


def test_sdk_without_sdk_is_a_clear_error(no_sdk: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SdkUnavailableError, match="PROFCOMPARE_BACKEND=sim"):
        sdk.load("sdk")
    monkeypatch.setenv(sdk.ENV_VAR, "sdk")
    with pytest.raises(SdkUnavailableError):
        sdk.resolve_backend()


def test_invalid_backend_names_list_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProfcompareError, match="auto, sdk, sim"):
        sdk.resolve_backend("gpu")
    monkeypatch.setenv(sdk.ENV_VAR, "hardware")
    with pytest.raises(ProfcompareError, match="'hardware'"):
        sdk.load()


def test_environment_and_argument_select_the_backend(fake_sdk: dict[str, types.ModuleType],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert sdk.sdk_available()
    monkeypatch.setenv(sdk.ENV_VAR, "auto")
    assert sdk.resolve_backend() == "sdk"
    real = sdk.load()
    assert real.name == "sdk" and real.popxl is fake_sdk["popxl"] and real.addons is fake_sdk["popxl_addons"]
    monkeypatch.setenv(sdk.ENV_VAR, " SIM ")
    assert sdk.resolve_backend() == "sim"
    assert sdk.load("sdk").ops is fake_sdk["popxl.ops"]  # the argument wins over the environment


def test_module_attributes_follow_the_environment(fake_sdk: dict[str, types.ModuleType],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sdk.ENV_VAR, "sim")
    from profcompare.sdk import ops, popxl

    assert popxl.Session.simulated is True and ops.matmul.__module__.startswith("profcompare.emulator.popxl")
    monkeypatch.setenv(sdk.ENV_VAR, "sdk")
    assert sdk.popxl is fake_sdk["popxl"]
    with pytest.raises(AttributeError):
        sdk.not_a_module  # noqa: B018
