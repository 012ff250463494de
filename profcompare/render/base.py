"""The renderer protocol and the registry of output formats.

A renderer turns a :class:`~profcompare.model.Report` or a
:class:`~profcompare.comparison.Comparison` into the content of one output (``str`` or ``bytes``);
writing it somewhere is :func:`profcompare.render.output.write_output`'s job. The text,
markdown and csv renderers also accept a :class:`profcompare.render.sections.VariablesView`
(the ``variables`` command's table).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from profcompare.errors import ProfcompareError

if TYPE_CHECKING:
    from profcompare.comparison import Comparison
    from profcompare.model import Report


@runtime_checkable
class Renderer(Protocol):
    """Something that renders a report or a comparison into one output document."""

    #: format name as given to ``--format``
    name: str
    #: file extension of the output, with the dot (``".md"``)
    file_extension: str

    def render(self, obj: Report | Comparison, *, top: int = 20) -> str | bytes:
        """Return the rendered document; tables are cut to ``top`` rows plus an "other" row."""
        ...


#: format name -> (module, class); modules are imported only when the format is asked for
_REGISTRY: dict[str, tuple[str, str]] = {
    "text": ("profcompare.render.text", "TextRenderer"),
    "markdown": ("profcompare.render.markdown", "MarkdownRenderer"),
    "json": ("profcompare.render.json_out", "JsonRenderer"),
    "csv": ("profcompare.render.csv_out", "CsvRenderer"),
    "html": ("profcompare.render.html", "HtmlRenderer"),
}

#: the output formats, in the order the CLI lists them
FORMATS: tuple[str, ...] = tuple(_REGISTRY)


def get_renderer(fmt: str, **options: Any) -> Renderer:
    """Return a new renderer for ``fmt`` (one of :data:`FORMATS`).

    ``options`` are passed to the renderer's constructor (e.g. ``color=True, width=100`` for
    text). Raises :class:`ProfcompareError` for an unknown format.
    """
    try:
        module_name, class_name = _REGISTRY[fmt]
    except KeyError:
        raise ProfcompareError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}") from None
    module = importlib.import_module(module_name)
    renderer: Renderer = getattr(module, class_name)(**options)
    return renderer


__all__ = ["FORMATS", "Renderer", "get_renderer"]
