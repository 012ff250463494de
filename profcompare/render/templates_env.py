"""The Jinja2 environment of every HTML page: the package's templates, autoescaping on."""

from __future__ import annotations

from functools import cache

import jinja2


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
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "allow_nan": False}
    env.filters["tojson_ordered"] = lambda value: jinja2.utils.htmlsafe_json_dumps(
        value, sort_keys=False, allow_nan=False)
    return env
