"""What the report model stands on: the value rules of its tables
(:mod:`~profcompare.base.report_values`), readable reprs of its summary tables
(:mod:`~profcompare.base.readable`) and the registry behind its display and plot methods
(:mod:`~profcompare.base.presenters`). Imports nothing of profcompare but its errors."""
