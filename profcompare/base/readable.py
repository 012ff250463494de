"""Readable reprs for the summary tables users print: figures without scientific notation.

pandas shows a column of bytes such as 23,068,672 and 2,048 as ``2.306867e+07``. The summary
frames profcompare returns keep their float64 dtypes (NaN marks a figure a report cannot give)
but print every number in full, with thousands separators, through these small subclasses.
Only the text and notebook display change; values, dtypes and arithmetic are pandas' own.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def readable_number(value: float) -> str:
    """``23,068,672`` for whole numbers, ``16.53`` for fractions, ``NaN`` for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.4g}"


class ReadableFrame(pd.DataFrame):
    """A DataFrame whose repr prints floats in full (see the module docstring)."""

    @property
    def _constructor(self) -> type[ReadableFrame]:
        return ReadableFrame

    def __repr__(self) -> str:
        with pd.option_context("display.max_columns", None, "display.width", 200):
            return self.to_string(float_format=readable_number)

    def _repr_html_(self) -> str:
        return self.to_html(float_format=readable_number)


class ReadableSeries(pd.Series):
    """A Series whose repr prints floats in full (see the module docstring)."""

    @property
    def _constructor(self) -> type[ReadableSeries]:
        return ReadableSeries

    @property
    def _constructor_expanddim(self) -> type[ReadableFrame]:
        return ReadableFrame

    def __repr__(self) -> str:
        return self.to_string(float_format=readable_number) + (f"\nName: {self.name}" if self.name is not None else "")


def readable(obj: Any) -> Any:
    """``obj`` (a DataFrame or Series) as its readable subclass, sharing the data."""
    if isinstance(obj, pd.DataFrame):
        return ReadableFrame(obj, copy=False)
    if isinstance(obj, pd.Series):
        return ReadableSeries(obj, copy=False)
    return obj


__all__ = ["ReadableFrame", "ReadableSeries", "readable", "readable_number"]
