"""The ``POPLAR_ENGINE_OPTIONS`` environment variable as a JSON object.

Both sides of a run read it: the runner adds the autoReport options to the user's object before
starting a workload, and the simulator interprets the object the way Poplar does
(:mod:`profcompare.emulator.compile.engine_options`). Parsing lives here, below both, so that
the two reject a malformed value with the same message.
"""

from __future__ import annotations

import json
from typing import Any

from profcompare.errors import EngineOptionsError

ENV_VAR = "POPLAR_ENGINE_OPTIONS"

#: Longest value quoted whole in an error message; longer values are shortened.
_SHOWN_CHARS = 80


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def parse_options_object(text: str | None) -> dict[str, Any]:
    """Return the option names and values of ``POPLAR_ENGINE_OPTIONS`` text as a dict.

    None or blank text gives an empty dict. Values are returned as JSON gave them (Poplar's
    strings such as ``"true"``, or JSON booleans and numbers); interpreting them is the
    caller's business. Raises EngineOptionsError when the text is not valid JSON or not a JSON
    object.
    """
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EngineOptionsError(
            f"{ENV_VAR} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            f"{_shown(text)!r}"
        ) from None
    except RecursionError:
        raise EngineOptionsError(f"{ENV_VAR} is nested too deeply to be engine options: {_shown(text)!r}") from None
    if not isinstance(data, dict):
        raise EngineOptionsError(
            f'{ENV_VAR} must be a JSON object such as {{"autoReport.all": "true"}}, got {_shown(text)!r}'
        )
    return data
