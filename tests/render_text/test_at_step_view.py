"""``compare --at``'s view on the MNIST sample comparison (onchip -> offchip-sharded): the
aligned live sets, the document drawn as text and Markdown, and its JSON."""

from __future__ import annotations

import json

import pandas.testing as pdt
from render_text_helpers import check_golden, scrub

from profcompare.comparison import Comparison
from profcompare.comparison.at_step import compare_at
from profcompare.render.at_step_json import at_step_json_text
from profcompare.render.markdown import render_document as markdown_document
from profcompare.render.sections.at_step import BY_PARAMETER_TITLE, at_step_document, at_step_headline
from profcompare.render.text import render_document

HEADLINE = ("At the peak, step 8 (base, layer3/bwd/matmul) / 16 (new, optimizer/adam): not-always-live "
            "214.3 KiB -> 2.4 MiB (+1033.2%); largest change: layer0.weight remote_staging +588.0 KiB")


def test_at_peak_is_the_peak_composition(comparison: Comparison) -> None:
    # at each report's own peak, the (parameter, role) join is what peak_composition says
    result = compare_at(comparison, "peak")
    columns = ["parameter", "role", "base_bytes", "new_bytes", "delta_bytes"]
    text = {"parameter": object, "role": object}
    pdt.assert_frame_equal(result.by_parameter[columns].astype(text), comparison.peak_composition()[columns].astype(text))


def test_at_peak_names_the_optimizer_state_staging_and_gradient_shards(comparison: Comparison) -> None:
    result = compare_at(comparison, "peak")
    assert (result.base.step, result.new.step) == (8, 16)
    rows = {(r["parameter"], r["role"]): (r["new_bytes"], r["status"]) for r in result.by_parameter.to_dict("records")}
    # new's peak is Adam's step: the optimizer state's staging copies of one shard and the
    # gradient shards, none of them live at base's peak (a backward matmul)
    assert rows[("layer0.weight", "remote_staging")] == (602112, "added")  # 196 KiB fp16 m + 392 KiB fp32 v
    assert rows[("layer0.weight", "gradient")] == (401408, "added")
    assert rows[("", "activation")] == (0, "removed")
    names = result.variables["name"].tolist()
    assert names[:3] == ["layer0/weight/grad/shard", "layer0/weight/second_moment/staging", "layer1/weight/grad/shard"]
    assert "layer0/weight/first_moment/staging" in names
    assert at_step_headline(result) == HEADLINE


def test_at_peak_text_golden(comparison: Comparison) -> None:
    text = render_document(at_step_document(compare_at(comparison, "peak"), top=8))
    assert HEADLINE in text
    check_golden("compare_at_peak.txt", scrub(text))


def test_at_regex_markdown_golden(comparison: Comparison) -> None:
    text = markdown_document(at_step_document(compare_at(comparison, "remote_load"), top=5))
    check_golden("compare_at_remote_load.md", scrub(text))


def test_at_step_document_sections(comparison: Comparison) -> None:
    document = at_step_document(compare_at(comparison, "14"), top=None)
    assert [s.title for s in document.sections] == [
        "Live at the chosen steps", BY_PARAMETER_TITLE, "Live variables", "Highest not-always-live peaks"]
    steps = document.sections[0]
    assert steps.items == ("base: step 14, grad/all_reduce (Call), the step asked for",
                           "new: step 14, grad/reduce_scatter (Call), aligned by program with the other report's step")
    peaks = document.sections[3].tables[0]
    assert [[c.text for c in row] for row in peaks.rows] == [
        ["1", "8", "layer3/bwd/matmul", "214.3 KiB", "16", "optimizer/adam", "2.4 MiB"],
        ["2", "5", "layer2/fwd/matmul", "214.0 KiB", "8", "layer3/bwd/matmul", "214.3 KiB"],
        ["3", "1", "layer0/fwd/matmul", "196.8 KiB", "5", "layer2/fwd/matmul", "214.0 KiB"],
    ]


def test_at_step_json(comparison: Comparison) -> None:
    data = json.loads(at_step_json_text(compare_at(comparison, "peak"), top=2))
    assert data["view"] == "at_step" and data["selector"] == "peak"
    assert data["headline"] == HEADLINE
    assert data["steps"]["new"] == {"step": 16, "program": "optimizer/adam", "program_type": "OnTileExecute",
                                    "how": "peak", "not_always_live_bytes": 2487040, "always_live_bytes": 18390380,
                                    "total_bytes": 20877420, "listed_bytes": 2327040}
    assert data["cut"]["variables"] == {"shown": 2, "total": 16, "cut": 14}
    assert data["variables"][0]["base_name"] is None and data["variables"][0]["new_first_step"] == 14
    assert len(data["by_parameter"]) == 9
    assert [p["step"] for p in data["peaks"]["base"]] == [8, 5, 1]


def test_a_per_ipu_split_gets_its_own_section(comparison: Comparison) -> None:
    import dataclasses

    import numpy as np
    import pandas as pd

    result = compare_at(comparison, "peak")
    assert "Not-always-live per IPU at the chosen steps" not in [s.title for s in at_step_document(result).sections]
    split = pd.DataFrame({"ipu": np.array([0, 1], dtype=np.int64), "base_bytes": np.array([2048, 0], dtype=np.int64),
                          "new_bytes": np.array([1024, 512], dtype=np.int64),
                          "delta_bytes": np.array([-1024, 512], dtype=np.int64)})
    document = at_step_document(dataclasses.replace(result, per_ipu=split))
    section = document.sections[1]
    assert section.title == "Not-always-live per IPU at the chosen steps"
    assert [[c.text for c in row] for row in section.tables[0].rows] == [
        ["0", "2.0 KiB", "1.0 KiB", "-1.0 KiB"], ["1", "0 B", "512 B", "+512 B"]]
