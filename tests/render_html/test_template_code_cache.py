"""The templates' compiled code kept between processes: used when the template is unchanged,
compiled again when it changed or the cached file is damaged, never a failure."""

from __future__ import annotations

import sys
from pathlib import Path

import jinja2
import pytest

from profcompare.render.templates_env import TEMPLATE_CODE_CACHE, TemplateCodeCache, environment


def _environment(templates: dict[str, str], directory: Path) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.DictLoader(templates), autoescape=True,
                              bytecode_cache=TemplateCodeCache(str(directory), "%s.jinja"))


def _compiles(env: jinja2.Environment, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    original = env.compile

    def compile_counted(source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return original(source, name, filename, raw, defer_init)

    monkeypatch.setattr(env, "compile", compile_counted)
    return compiled


def test_a_second_process_uses_the_cached_code_until_the_template_changes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache = tmp_path / "__pycache__"
    first = _environment({"t": "<b>{{ x }}</b>"}, cache)
    compiled = _compiles(first, monkeypatch)
    assert first.get_template("t").render(x="<&>") == "<b>&lt;&amp;&gt;</b>"
    assert compiled == ["t"] and len(list(cache.glob("*.jinja"))) == 1
    second = _environment({"t": "<b>{{ x }}</b>"}, cache)
    compiled = _compiles(second, monkeypatch)
    assert second.get_template("t").render(x="<&>") == "<b>&lt;&amp;&gt;</b>"
    assert compiled == []  # loaded, not compiled
    edited = _environment({"t": "<i>{{ x }}</i>"}, cache)
    compiled = _compiles(edited, monkeypatch)
    assert edited.get_template("t").render(x=1) == "<i>1</i>"
    assert compiled == ["t"]


def test_a_damaged_file_an_unwritable_directory_and_no_bytecode_compile_as_before(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache = tmp_path / "__pycache__"
    _environment({"t": "{{ x }}"}, cache).get_template("t")
    for path in cache.glob("*.jinja"):
        path.write_bytes(path.read_bytes()[:20] + b"\x00garbage")
    damaged = _environment({"t": "{{ x }}"}, cache)
    compiled = _compiles(damaged, monkeypatch)
    assert damaged.get_template("t").render(x=2) == "2" and compiled == ["t"]
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert _environment({"t": "{{ x }}"}, blocked / "__pycache__").get_template("t").render(x=3) == "3"
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    quiet = tmp_path / "quiet"
    assert _environment({"t": "{{ x }}"}, quiet).get_template("t").render(x=4) == "4"
    assert not quiet.exists()


def test_the_pages_cache_sits_beside_their_templates() -> None:
    cache = environment().bytecode_cache
    assert isinstance(cache, TemplateCodeCache)
    assert Path(cache.directory) == TEMPLATE_CODE_CACHE
    assert TEMPLATE_CODE_CACHE.parent == Path(__file__).resolve().parents[2] / "profcompare" / "render" / "templates"
