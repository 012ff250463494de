"""The page's chart JSON written directly: a BokehJS document of a few models, without Bokeh's
Python object model.

Building a chart through ``bokeh.plotting.figure`` and ``bokeh.embed.json_item`` costs about a
second per page (importing ``bokeh.models``, then validating and serializing every property of
hundreds of models), for a JSON document of a dozen kinds of objects. This module writes the
same document: each :class:`Model` is a BokehJS type name and the attributes Bokeh would write
for it (only those that differ from their defaults, in Bokeh's order), and :func:`json_item`
serializes a figure as Bokeh's serializer does (an object in full where it first occurs and as
``{"id": ...}`` after that, arrays as base64 of their gzip-compressed bytes, dictionaries as
``map`` entries, NaN as ``{"type": "number", "value": "nan"}``), with ids ``<chart id>-<n>`` in
order of first appearance.

The output is the JSON Bokeh writes for the same figure, byte for byte:
tests/render_html/test_bokeh_doc.py builds the model graph of every kind of chart the page draws
from Bokeh's own Python models (which refuse a name, attribute or value they do not know) and
requires the JSON ``bokeh.embed.json_item`` writes for it, key order included; so an upgrade of
Bokeh that changes its document format fails the tests, not a user's page.
"""

from __future__ import annotations

import base64
import gzip
import importlib.util
import math
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

#: dtypes Bokeh writes as binary arrays (others as lists)
_BINARY_DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32,
                                                  np.int32, np.float32, np.float64))
#: a line_dash name as Bokeh writes it (the patterns of bokeh.core.property.visual.DashPattern)
DASHES = {"solid": [], "dashed": [6], "dotted": [2, 4], "dotdash": [2, 4, 6, 4], "dashdot": [6, 4, 2, 4]}
#: the numbro format of every axis's tick labels: thousands separators, at most three decimals
AXIS_FORMAT = "0,0.[000]"
#: the colour bokeh.plotting gives a glyph given none (its glyph API's default, Bokeh 3)
DEFAULT_COLOUR = "#1f77b4"


#: Bokeh's attribute order of the models whose attributes are set after construction
_ORDER = {
    "DataRange1d": ("name", "start", "renderers", "range_padding", "only_visible"),
    "LinearAxis": ("visible", "ticker", "formatter", "axis_label", "major_label_overrides", "major_label_policy"),
    "Grid": ("visible", "dimension", "axis", "grid_line_color"),
}


class Model:
    """A BokehJS model: its type ``name`` and its attributes (non-default ones, in Bokeh's order)."""

    __slots__ = ("attributes", "name")

    def __init__(self, name: str, /, **attributes: Any) -> None:
        self.name = name
        self.attributes = attributes

    def set(self, **attributes: Any) -> None:
        """Set attributes, keeping Bokeh's order (known for the models in ``_ORDER``)."""
        merged = {**self.attributes, **attributes}
        order = _ORDER.get(self.name)
        self.attributes = _ordered(order, merged) if order else merged


class Map:
    """A dictionary Bokeh writes as ``{"type": "map", "entries": [[key, value], ...]}``."""

    __slots__ = ("entries",)

    def __init__(self, entries: Iterable[tuple[Any, Any]]) -> None:
        self.entries = list(entries)


def field(name: str) -> dict[str, str]:
    """A glyph property read from column ``name`` of its data source."""
    return {"type": "field", "field": name}


def value(v: Any) -> dict[str, Any]:
    """A glyph property with one value for every item."""
    return {"type": "value", "value": v}


def _ordered(order: Sequence[str], attributes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(attributes) - set(order)
    if unknown:
        raise ValueError(f"attributes not in the model's order: {sorted(unknown)}")
    return {key: attributes[key] for key in order if key in attributes}


# ---------------------------------------------------------------------------------- glyphs

#: per glyph: (attributes in Bokeh's order, its coordinate attributes, the visual attributes it
#: writes as ``value``/``field`` (vectorized), the alphas of its selection/muted copies)
_GLYPHS: dict[str, tuple[tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...]]] = {
    "Step": (("x", "y", "line_color", "line_alpha", "line_width", "mode"), ("x", "y"), frozenset(), ("line_alpha",)),
    "Line": (("x", "y", "line_color", "line_alpha", "line_width", "line_dash"), ("x", "y"), frozenset(),
             ("line_alpha",)),
    "VAreaStep": (("x", "y1", "y2", "step_mode", "fill_color", "fill_alpha", "hatch_alpha"), ("x", "y1", "y2"),
                  frozenset({"hatch_alpha"}), ("fill_alpha", "hatch_alpha")),
    "VBar": (("x", "width", "top", "line_color", "line_alpha", "fill_color", "fill_alpha", "hatch_alpha"),
             ("x", "width", "top"), frozenset({"line_color", "line_alpha", "fill_color", "fill_alpha", "hatch_alpha"}),
             ("line_alpha", "fill_alpha", "hatch_alpha")),
    "Quad": (("left", "right", "bottom", "top", "line_color", "line_alpha", "line_width", "fill_color", "fill_alpha",
              "hatch_color", "hatch_alpha", "hatch_pattern"),
             ("left", "right", "bottom", "top"),
             frozenset({"line_color", "line_alpha", "line_width", "fill_color", "fill_alpha", "hatch_color",
                        "hatch_alpha", "hatch_pattern"}),
             ("line_alpha", "fill_alpha", "hatch_alpha")),
    "Text": (("x", "y", "text", "x_offset", "text_color", "text_alpha", "text_font_size", "text_baseline"),
             ("x", "y", "text"), frozenset({"x_offset", "text_color", "text_alpha", "text_font_size", "text_baseline"}),
             ("text_alpha",)),
}


def _glyph(kind: str, attributes: dict[str, Any], alpha: float | None = None) -> Model:
    order, coordinates, vectorized, alphas = _GLYPHS[kind]
    attrs = dict(attributes)
    if alpha is not None:  # the nonselection (0.1) and muted (0.2) copies
        for name in alphas:
            attrs[name] = alpha
    out: dict[str, Any] = {}
    for name, v in attrs.items():
        if name in coordinates:
            out[name] = field(v) if isinstance(v, str) else value(v)
        elif name in vectorized and not isinstance(v, dict):
            out[name] = value(v)
        else:
            out[name] = v
    return Model(kind, **_ordered(order, out))


def data_source(data: dict[str, Any], name: str | None = None) -> Model:
    """A ColumnDataSource of ``data`` (column -> numpy array or list)."""
    attrs: dict[str, Any] = {} if name is None else {"name": name}
    attrs["selected"] = Model("Selection", indices=[], line_indices=[])
    attrs["selection_policy"] = Model("UnionRenderers")
    attrs["data"] = Map(data.items())
    return Model("ColumnDataSource", **attrs)


# ---------------------------------------------------------------------------------- figure

def _axis(label: str | None = None) -> Model:
    attrs: dict[str, Any] = {}
    attrs["ticker"] = Model("BasicTicker", mantissas=[1, 2, 5])
    # thousands separators on every axis (1,000,000, as the tables write numbers); up to three
    # decimals where the ticks need them (a MiB axis spanning 0.5)
    attrs["formatter"] = Model("NumeralTickFormatter", format=AXIS_FORMAT)
    if label is not None:
        attrs["axis_label"] = label
    attrs["major_label_policy"] = Model("AllLabels")
    return Model("LinearAxis", **attrs)


def _grid(axis: Model, dimension: int) -> Model:
    attrs: dict[str, Any] = {}
    if dimension:
        attrs["dimension"] = dimension
    attrs["axis"] = axis
    return Model("Grid", **attrs)


def data_range(name: str | None = None, **attributes: Any) -> Model:
    """A DataRange1d (``start``, ``renderers``, ``range_padding``, ``only_visible``)."""
    attrs = {"name": name, **attributes} if name is not None else attributes
    return Model("DataRange1d", **_ordered(_ORDER["DataRange1d"], attrs))


def fixed_range(start: float, end: float, *, name: str | None = None, bounds: tuple[float, float] | None = None) -> Model:
    """A Range1d from ``start`` to ``end`` (Bokeh leaves out a start of 0, its default)."""
    attrs: dict[str, Any] = {} if name is None else {"name": name}
    if start != 0:
        attrs["start"] = start
    attrs["end"] = end
    if bounds is not None:
        attrs["bounds"] = list(bounds)
    return Model("Range1d", **attrs)


def _box_zoom() -> Model:
    nan = float("nan")
    overlay = Model(
        "BoxAnnotation", syncable=False, line_color="black", line_alpha=1.0, line_width=2, line_dash=[4, 4],
        fill_color="lightgrey", fill_alpha=0.5, level="overlay", visible=False,
        left=nan, right=nan, top=nan, bottom=nan,
        left_units="canvas", right_units="canvas", top_units="canvas", bottom_units="canvas",
        handles=Model("BoxInteractionHandles", all=Model("AreaVisuals", fill_color="white", hover_fill_color="lightgray")),
    )
    return Model("BoxZoomTool", dimensions="width", overlay=overlay)


class Figure:
    """A ``bokeh.plotting.figure`` as the page draws it: width-stretched, ``height`` pixels, an x
    and y axis (with optional labels) and grid lines; the standard tools (box zoom along x, the
    active drag, wheel zoom and pan along x, reset, save; no logo) unless ``tools`` is False
    (then no toolbar either). With ``wheel_zoom`` the wheel zoom is the active scroll tool: the
    mouse wheel over the chart zooms its x axis instead of scrolling the page (time charts)."""

    def __init__(self, name: str, *, height: int, x_range: Model, y_range: Model,
                 x_label: str | None = None, y_label: str | None = None, tools: bool = True,
                 wheel_zoom: bool = False) -> None:
        self.name = name
        self.height = height
        self.x_range = x_range
        self.y_range = y_range
        self.renderers: list[Model] = []
        self.xaxis = _axis(x_label)
        self.yaxis = _axis(y_label)
        self.xgrid = _grid(self.xaxis, 0)
        self.ygrid = _grid(self.yaxis, 1)
        self.center: list[Model] = [self.xgrid, self.ygrid]
        self.below: list[Model] = [self.xaxis]
        self.right: list[Model] = []
        self.tools_on = tools
        self.tools: list[Model] = []
        self.box: Model | None = None
        self.wheel: Model | None = None
        if tools:
            self.box = _box_zoom()
            wheel = Model("WheelZoomTool", dimensions="width", renderers="auto")
            self.wheel = wheel if wheel_zoom else None
            self.tools = [self.box, wheel, Model("PanTool", dimensions="width"), Model("ResetTool"), Model("SaveTool")]
        self.legend: Model | None = None

    def glyph(self, kind: str, source: Model, *, legend_label: str | None = None, **attributes: Any) -> Model:
        """Add a glyph renderer (``Step``, ``Line``, ``VAreaStep``, ``VBar``, ``Quad`` or ``Text``) drawing
        ``source``: coordinates are column names (or numbers), visual attributes values (or
        :func:`field`). A ``legend_label`` adds the renderer to the legend's item of that label."""
        renderer = Model(
            "GlyphRenderer",
            data_source=source,
            view=Model("CDSView", filter=Model("AllIndices")),
            glyph=_glyph(kind, attributes),
            nonselection_glyph=_glyph(kind, attributes, 0.1),
            muted_glyph=_glyph(kind, attributes, 0.2),
        )
        self.renderers.append(renderer)
        if legend_label is not None:
            if self.legend is None:
                self.legend = Model("Legend", items=[])
            items = self.legend.attributes["items"]
            label = value(legend_label)
            item = next((i for i in items if i.attributes["label"] == label), None)
            if item is None:
                items.append(Model("LegendItem", label=label, renderers=[renderer]))
            else:
                item.attributes["renderers"].append(renderer)
        return renderer

    def hide_axes(self) -> None:
        """Hide both axes and their grid lines."""
        for model in (self.xaxis, self.yaxis, self.xgrid, self.ygrid):
            model.set(visible=False)

    def hover(self, renderers: list[Model], tooltips: Sequence[tuple[str, str]], **attributes: Any) -> None:
        """Add a HoverTool over ``renderers`` (``mode``, ``point_policy``)."""
        attrs = {"renderers": renderers, "tooltips": [list(t) for t in tooltips], "sort_by": None, **attributes}
        self.tools.append(Model("HoverTool", **_ordered(("renderers", "tooltips", "sort_by", "mode", "point_policy"),
                                                        attrs)))

    def legend_below(self, **attributes: Any) -> None:
        """Put the legend under the plot (``location``, ``orientation``, ``click_policy``)."""
        self.below.append(self._placed_legend(attributes))

    def legend_right(self, **attributes: Any) -> None:
        """Put the legend right of the plot, one entry per line (``location``, ``click_policy``)."""
        self.right.append(self._placed_legend(attributes))

    def _placed_legend(self, attributes: dict[str, Any]) -> Model:
        """The figure's legend rebuilt with ``attributes``, to be placed beside the plot."""
        if self.legend is None:
            raise ValueError("the figure has no legend")
        attrs = {**attributes, "items": self.legend.attributes["items"]}
        self.legend = Model("Legend", **_ordered(("location", "orientation", "click_policy", "items"), attrs))
        return self.legend

    def model(self, **extra: Any) -> Model:
        """The Figure model (``toolbar_location`` and ``js_event_callbacks`` may be given in ``extra``)."""
        extra = dict(extra)
        # Bokeh writes a model's event callbacks right after its name (Model's own properties)
        events = {"js_event_callbacks": extra.pop("js_event_callbacks")} if "js_event_callbacks" in extra else {}
        attrs: dict[str, Any] = {"name": self.name, **events, "height": self.height, "sizing_mode": "stretch_width",
                                 "x_range": self.x_range, "y_range": self.y_range,
                                 "x_scale": Model("LinearScale"), "y_scale": Model("LinearScale"),
                                 "title": Model("Title")}
        if self.renderers:
            attrs["renderers"] = self.renderers
        if self.tools_on:
            active = {"active_scroll": self.wheel} if self.wheel is not None else {}
            attrs["toolbar"] = Model("Toolbar", tools=self.tools, logo=None, active_drag=self.box, **active)
        else:
            attrs["toolbar"] = Model("Toolbar")
        attrs.update(extra)
        attrs["left"] = [self.yaxis]
        if self.right:
            attrs["right"] = self.right
        attrs["below"] = self.below
        attrs["center"] = self.center
        return Model("Figure", **attrs)


# ---------------------------------------------------------------------------------- serialization

@dataclass(frozen=True)
class _Settings:
    """What the page needs of Bokeh's settings (``bokeh.settings.settings``) and its version."""

    version: str
    compression_level: int
    dev: bool
    minified: bool
    log_level: str | None
    bokehjs_path: Path


#: Bokeh's defaults of the settings the page reads (bokeh/settings.py), when nothing sets them
_DEFAULT_COMPRESSION_LEVEL = 2
_DEFAULT_LOG_LEVEL = "info"


def _settings() -> _Settings:
    """Bokeh's settings and version. Importing Bokeh costs about 50 ms of every page (its
    version through ``importlib.metadata``, its settings through YAML), so when nothing can set
    a setting -- no ``BOKEH_*`` environment variable, no user config file -- its defaults are
    used, with the version and the BokehJS directory of the installed package (read from its
    metadata); otherwise, or when Bokeh is imported already, Bokeh's own settings answer.
    tests/render_html/test_bokeh_doc.py checks the defaults against Bokeh's."""
    installed = None if "bokeh" in sys.modules or _settings_may_be_set() else _installed_bokeh()
    if installed is not None:
        package, version = installed
        return _Settings(version, _DEFAULT_COMPRESSION_LEVEL, False, True, _DEFAULT_LOG_LEVEL,
                         package / "server" / "static")
    import bokeh
    from bokeh.settings import settings

    dev = bool(settings.dev)
    return _Settings(str(bokeh.__version__), int(settings.compression_level()), dev,
                     bool(settings.minified(False if dev else None)), settings.log_level(),
                     Path(settings.bokehjs_path()))


def _settings_may_be_set() -> bool:
    if any(name.startswith("BOKEH_") for name in os.environ):
        return True
    try:
        return (Path.home() / ".bokeh" / "bokeh.yaml").exists()  # Bokeh's user config file
    except (OSError, RuntimeError):  # no home directory: Bokeh decides
        return True


@cache
def _installed_bokeh() -> tuple[Path, str] | None:
    """(the installed Bokeh's package directory, its version from its metadata), without
    importing it; None when it cannot be told apart (then Bokeh is imported)."""
    spec = importlib.util.find_spec("bokeh")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    found = list(package.parent.glob("bokeh-*.dist-info"))
    if len(found) != 1:
        return None
    try:
        with open(found[0] / "METADATA", encoding="utf-8") as metadata:
            for line in metadata:
                if line.startswith("Version:"):
                    return package, line.partition(":")[2].strip()
                if not line.strip():
                    break
    except OSError:
        return None
    return None


def _compression_level() -> int:
    """Bokeh's gzip level of embedded arrays (its ``compression_level`` setting)."""
    return _settings().compression_level


def inline_js() -> str:
    """The text of ``bokeh.resources.Resources(mode="inline", components=["bokeh"]).js_raw``
    joined by newlines, from Bokeh's settings (minified, log level, dev, BokehJS path) as
    Resources reads them: the library file between ``/* BEGIN name */`` and ``/* END name */``
    lines, then the log-level (and dev) statements."""
    settings = _settings()
    path = settings.bokehjs_path / "js" / f"bokeh{'.min' if settings.minified else ''}.js"
    raw = [f"/* BEGIN {path.name} */\n{path.read_bytes().decode('utf-8')}\n/* END {path.name} */"]
    if settings.log_level is not None:
        raw.append(f'Bokeh.set_log_level("{settings.log_level}");')
    if settings.dev:
        raw.append("Bokeh.settings.dev = true")
    return "\n".join(raw)


def _ndarray(array: np.ndarray, level: int) -> dict[str, Any]:
    shape = list(array.shape)
    if array.dtype == np.int64 or array.dtype == np.uint64:
        small = np.int32 if array.dtype == np.int64 else np.uint32
        info = np.iinfo(small)
        if not np.any((array < info.min) | (array > info.max)):
            array = array.astype(small)
    array = np.ascontiguousarray(array)
    if array.dtype.kind == "U":
        data: Any = array.flatten().tolist()
        dtype = "object"
    elif array.dtype not in _BINARY_DTYPES:
        data = [_plain(v) for v in array.flatten().tolist()]
        dtype = "object"
    else:
        packed = base64.b64encode(gzip.compress(array.tobytes(), mtime=1, compresslevel=level)).decode("utf-8")
        data = {"type": "bytes", "data": packed}
        dtype = array.dtype.name
    return {"type": "ndarray", "array": data, "shape": shape, "dtype": dtype, "order": sys.byteorder}


def _plain(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            return {"type": "number", "value": "nan"}
        if math.isinf(v):
            return {"type": "number", "value": "-inf" if v < 0 else "+inf"}
    return v


class _Serializer:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.ids: dict[int, str] = {}
        self.written: set[int] = set()
        self.level = _compression_level()

    def id_of(self, model: Model) -> str:
        return self.ids.setdefault(id(model), f"{self.prefix}-{len(self.ids) + 1}")

    def encode(self, v: Any) -> Any:
        if isinstance(v, Model):
            if id(v) in self.written:
                return {"id": self.ids[id(v)]}
            self.written.add(id(v))
            rep: dict[str, Any] = {"type": "object", "name": v.name, "id": self.id_of(v)}
            if v.attributes:
                rep["attributes"] = {key: self.encode(inner) for key, inner in v.attributes.items()}
            return rep
        if isinstance(v, (str, bool)) or v is None:
            return v
        if isinstance(v, (float, np.floating)):
            return _plain(float(v))
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, np.ndarray):
            return _ndarray(v, self.level)
        if isinstance(v, (list, tuple)):
            if all(type(inner) is str for inner in v):  # a column of tooltip texts: written as is
                return list(v)
            return [self.encode(inner) for inner in v]
        if isinstance(v, Map):
            if not v.entries:
                return {"type": "map"}
            return {"type": "map", "entries": [[self.encode(k), self.encode(x)] for k, x in v.entries]}
        if isinstance(v, dict):
            return {key: self.encode(inner) for key, inner in v.items()}
        raise TypeError(f"cannot write {type(v).__name__} into a Bokeh document")


def bokeh_version() -> str:
    """The installed Bokeh's version (its JavaScript draws the page, so the document names it)."""
    return _settings().version


def json_item(root: Model) -> dict[str, Any]:
    """The JSON item of ``root`` (a Figure), as ``bokeh.embed.json_item`` writes it, with model
    ids ``<figure name>-<n>`` numbered in order of first appearance."""
    serializer = _Serializer(str(root.attributes["name"]))
    root_id = serializer.id_of(root)
    config = serializer.encode(Model("DocumentConfig", notifications=Model("Notifications")))
    version = bokeh_version()
    doc = {"version": version, "title": "", "config": config, "roots": [serializer.encode(root)]}
    return {"target_id": None, "root_id": root_id, "doc": doc, "version": version}


__all__ = ["DASHES", "DEFAULT_COLOUR", "Figure", "Map", "Model", "bokeh_version", "data_range", "data_source",
           "field", "fixed_range", "inline_js", "json_item", "value"]
