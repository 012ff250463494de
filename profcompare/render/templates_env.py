"""The Jinja2 environment of every HTML page: the package's templates, autoescaping on."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from profcompare.render.shorten import shorten_name


#: keys of the columns that hold names from a report (variables, programs, operations, remote
#: buffers): a page shows at most :data:`PAGE_NAME_CHARS` characters of them. The ledger's
#: parameter names wrap instead: its cells of several figures leave a cut name too little room
PAGE_NAME_KEYS = frozenset({"name", "op"})

#: the most characters of a name a page's table shows: longer names are cut in the middle
#: (:func:`~profcompare.render.shorten.shorten_name`), the whole name in the cell's tooltip, its
#: sort key and the row's ``data-name``, so a long op or program name keeps its row to one line
#: (GPT-J's ``DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@449`` wrapped
#: the Operations and Code tables to two and three lines a row)
PAGE_NAME_CHARS = 40


def cell_tag(tag: str, cell: Any, column: Any) -> Markup:
    """One table cell as HTML: ``<td class="num tone-bad" data-sort="..." title="...">text</td>``.

    ``cell`` is a :class:`profcompare.render.html_model.Cell`, ``column`` its column (numeric
    cells are right-aligned); a text cell gets ``data-sort`` only when its sort key differs from
    its text (keeps big tables small). A name column's cell (:data:`PAGE_NAME_KEYS`) is classed
    ``name`` and kept to one line; a name longer than :data:`PAGE_NAME_CHARS` shows cut in the
    middle, the whole name in its tooltip and its sort key. Every value is escaped, as the
    template would. Written in Python rather than as a template macro: a page holds thousands of
    cells, and a macro call per cell was a tenth of a second of every comparison page.
    """
    text, title, sort = cell.text, cell.title, cell.sort
    classes = ["num"] if column.numeric else []
    if column.key in PAGE_NAME_KEYS and not column.numeric:
        classes.append("name")
        if len(text) > PAGE_NAME_CHARS:
            text = shorten_name(cell.text, PAGE_NAME_CHARS)
            title = f"{cell.text}\n{title}" if title else cell.text
            sort = cell.text if sort is None else sort
    if cell.tone:
        classes.append(f"tone-{cell.tone}")
    attributes = f' class="{escape(" ".join(classes))}"' if classes else ""
    if sort is not None and sort != text:
        attributes += f' data-sort="{escape(sort)}"'
    if title:
        attributes += f' title="{escape(title)}"'
    swatch = getattr(cell, "swatch", None)
    mark = f'<span class="swatch" style="background-color:{escape(swatch)}" aria-hidden="true"></span>' if swatch else ""
    return Markup(f"<{tag}{attributes}>{mark}{escape(text)}</{tag}>")


def row_tag(row: Any, columns: Any, index: int | None = None) -> Markup:
    """One body row of a table as HTML: ``<tr data-status="grew">`` (the row's ``data-*``
    attributes, escaped), its cells by :func:`cell_tag`, ``</tr>``, then its ``members`` (a
    folded run's programs) as hidden rows alike. A row with a ``detail`` carries ``data-row``,
    its ``index`` among the table's rows (where the page finds its detail). Written in Python
    for the reason cell_tag is: a page holds hundreds of rows."""
    extra = f' data-row="{int(index)}"' if index is not None and getattr(row, "detail", None) is not None else ""
    return Markup(_row_html(row, columns, extra) + "".join(_row_html(member, columns, " hidden")
                                                            for member in getattr(row, "members", ())))


def _row_html(row: Any, columns: Any, extra: str) -> str:
    """One ``<tr>`` of ``row`` (``extra``: more attributes, e.g. `` hidden``)."""
    attributes = "".join(f' data-{escape(key)}="{escape(value)}"' for key, value in row.data.items())
    classes = getattr(row, "classes", ())
    if classes:
        attributes = f' class="{escape(" ".join(classes))}"' + attributes
    cells = "".join(cell_tag("td", cell, column) for cell, column in zip(row.cells, columns, strict=False))
    return f"<tr{attributes}{extra}>{cells}</tr>"


#: where each template's compiled code is kept: beside the templates, as Python keeps a
#: module's bytecode beside it
TEMPLATE_CODE_CACHE = Path(__file__).with_name("templates") / "__pycache__"


class TemplateCodeCache(jinja2.FileSystemBytecodeCache):
    """Each template's compiled Python code kept in ``templates/__pycache__`` between runs, as
    Python keeps a module's bytecode: compiling the comparison page's templates was about 0.03
    CPU seconds of every run (``time.process_time`` around ``get_template``), loading their code
    about a millisecond. Jinja checks the template's source checksum and the Python version of
    a cached file before using it, so an edited template is compiled again. Nothing is written
    when Python writes no bytecode (``PYTHONDONTWRITEBYTECODE``) or the directory cannot be
    written (then every process compiles, as before); an unreadable cached file is ignored."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged cache file: compile the template instead
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            Path(self.directory).mkdir(exist_ok=True)
            super().dump_bytecode(bucket)  # a temporary file renamed into place
        except OSError:
            pass


@cache
def environment() -> jinja2.Environment:
    """The shared environment: package templates, autoescape, strict undefined names, ``tojson``
    with sorted keys and no NaN, and ``tojson_ordered`` (the same HTML-safe escaping with the keys
    kept in order: Bokeh's JSON defines each model where it first occurs and refers to it by id
    afterwards, so its key order matters)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("profcompare.render", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=TemplateCodeCache(str(TEMPLATE_CODE_CACHE), "%s.jinja"),
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "allow_nan": False}
    env.globals["cell_tag"] = cell_tag
    env.globals["row_tag"] = row_tag
    env.filters["tojson_ordered"] = lambda value: jinja2.utils.htmlsafe_json_dumps(
        value, sort_keys=False, allow_nan=False)
    return env
