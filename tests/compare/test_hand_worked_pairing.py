"""Pairing the variables of two reports, worked out by hand: each pass of the variables diff
(attributed, loose graph-scoped, exact, normalised) on names where the pass decides the pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
from compare_builders import report, variables

from profcompare.comparison import MATCHES, compare

MATCH = pd.CategoricalDtype(list(MATCHES))


def _side(rows: list[tuple[str, int, str, str]], variant: str = "base"):
    """A report from (name, bytes, parameter, role) rows."""
    return report(variant, variables=variables([(n, b) for n, b, _, _ in rows], parameter=[r[2] for r in rows],
                                               role=[r[3] for r in rows]))


def _pairs(base_rows, new_rows) -> set[tuple]:
    result = compare(_side(base_rows), _side(new_rows, "new"), noise_bytes=0, noise_pct=0).variables
    # every pair shares parameter and role
    paired = result[result["match"].astype(str) != "unmatched"]
    assert (paired["base_parameter"] == paired["new_parameter"]).all()
    assert (paired["base_role"] == paired["new_role"]).all()
    return set(zip(result["base_name"], result["new_name"], result["match"].astype(str)))


def test_a_graph_scope_s_index_alone_does_not_stop_an_attributed_pair() -> None:
    # the same parameter's Adam input under another graph index (graphs created in another order)
    got = _pairs([("Adam_subgraph(2)/w", 400, "w", "weight_copy")],
                 [("Adam_subgraph(3)/w", 400, "w", "weight_copy")])
    assert got == {("Adam_subgraph(2)/w", "Adam_subgraph(3)/w", "attributed")}


def test_attributed_rows_pair_by_parameter_whatever_their_graph_index_and_instance() -> None:
    """One Adam graph called for a then b in base, for b then a in new: instance @1 holds a in
    base and b in new. Rows pair by parameter, not by instance number."""
    base = [("Adam_subgraph(2)/m@1", 200, "a", "optimizer_state"), ("Adam_subgraph(2)/m@2", 100, "b", "optimizer_state")]
    new = [("Adam_subgraph(5)/m@1", 100, "b", "optimizer_state"), ("Adam_subgraph(5)/m@2", 200, "a", "optimizer_state")]
    assert _pairs(base, new) == {
        ("Adam_subgraph(2)/m@1", "Adam_subgraph(5)/m@2", "attributed"),
        ("Adam_subgraph(2)/m@2", "Adam_subgraph(5)/m@1", "attributed")}


def test_a_name_shared_by_two_parameters_is_never_paired_across_them() -> None:
    got = _pairs([("stage", 64, "p", "remote_staging"), ("loss", 4, "", "activation")],
                 [("stage", 64, "q", "remote_staging"), ("loss", 4, "", "activation")])
    assert got == {("stage", None, "unmatched"), (None, "stage", "unmatched"), ("loss", "loss", "exact")}


def test_unattributed_graph_scoped_rows_pair_by_role_name_and_instance_when_unique() -> None:
    base = [("Net_subgraph(0)/x@2", 80, "", "activation"),
            ("Net_subgraph(0)/x@1", 80, "", "activation"),
            # two graphs both hold a "t": the graph index cannot say which is which
            ("G(0)/t", 16, "", "activation"), ("G(1)/t", 16, "", "activation"),
            # the same local name and instance but another role
            ("Net_subgraph(0)/p", 32, "", "partials")]
    new = [("Net_subgraph(1)/x@1", 80, "", "activation"),
           ("Net_subgraph(1)/x@2", 96, "", "activation"),
           ("G(4)/t", 16, "", "activation"),
           ("Net_subgraph(1)/p", 32, "", "activation")]
    assert _pairs(base, new) == {
        ("Net_subgraph(0)/x@1", "Net_subgraph(1)/x@1", "attributed"),
        ("Net_subgraph(0)/x@2", "Net_subgraph(1)/x@2", "attributed"),
        ("G(0)/t", None, "unmatched"), ("G(1)/t", None, "unmatched"), (None, "G(4)/t", "unmatched"),
        ("Net_subgraph(0)/p", None, "unmatched"), (None, "Net_subgraph(1)/p", "unmatched")}


def test_the_passes_in_order_on_one_table() -> None:
    base = report(variables=variables(
        [("Adam_subgraph(2)/w", 400), ("main/h_1", 40), ("loss", 4), ("opt/m_1", 100), ("opt/m_2", 100),
         ("Net_subgraph(0)/a@1", 8)],
        parameter=["w", "", "", "", "", ""],
        role=["weight_copy", "activation", "activation", "other", "other", "activation"]))
    new = report("new", variables=variables(
        [("Adam_subgraph(7)/w", 400), ("h__t3", 48), ("loss", 4), ("opt/m", 100), ("Net_subgraph(1)/a@1", 8)],
        parameter=["w", "", "", "", ""],
        role=["weight_copy", "activation", "activation", "other", "activation"]))
    result = compare(base, new, noise_bytes=0, noise_pct=0).variables
    expected = pd.DataFrame({
        # largest |delta| first, then by name
        "name": pd.Series(["opt/m", "opt/m_1", "opt/m_2", "h__t3", "Adam_subgraph(7)/w", "Net_subgraph(1)/a@1", "loss"],
                          dtype=object),
        "match": pd.Categorical(["unmatched", "unmatched", "unmatched", "normalised", "attributed", "attributed",
                                 "exact"], dtype=MATCH),
        "base_name": pd.Series([None, "opt/m_1", "opt/m_2", "main/h_1", "Adam_subgraph(2)/w", "Net_subgraph(0)/a@1",
                                "loss"], dtype=object),
        "new_name": pd.Series(["opt/m", None, None, "h__t3", "Adam_subgraph(7)/w", "Net_subgraph(1)/a@1", "loss"],
                              dtype=object),
        "delta_bytes": np.array([100, -100, -100, 8, 0, 0, 0], dtype=np.int64),
    })
    pdt.assert_frame_equal(result[list(expected.columns)], expected)


def test_instance_and_repeat_suffixes_alone_leave_the_attributed_stem() -> None:
    # no graph index: the "@k" (call instance) and "#k" (repeat) suffixes still go
    base = [("opt/m@1", 64, "a", "optimizer_state"), ("w#2", 32, "w", "weight_copy")]
    new = [("opt/m@2", 64, "a", "optimizer_state"), ("w", 32, "w", "weight_copy")]
    assert _pairs(base, new) == {("opt/m@1", "opt/m@2", "attributed"), ("w#2", "w", "attributed")}


def test_repeated_attributed_stems_pair_k_th_with_k_th() -> None:
    # two instances of one parameter's gradient on each side: first with first, second with second
    base = [("G(1)/g@1", 10, "p", "gradient"), ("G(1)/g@2", 20, "p", "gradient")]
    new = [("G(2)/g@1", 11, "p", "gradient"), ("G(2)/g@2", 21, "p", "gradient")]
    assert _pairs(base, new) == {("G(1)/g@1", "G(2)/g@1", "attributed"), ("G(1)/g@2", "G(2)/g@2", "attributed")}


def test_a_graph_scoped_row_is_not_paired_with_an_unscoped_one_of_the_same_local_name() -> None:
    got = _pairs([("Net_subgraph(0)/y", 8, "", "activation")], [("Net_subgraph/y", 8, "", "activation")])
    assert got == {("Net_subgraph(0)/y", None, "unmatched"), (None, "Net_subgraph/y", "unmatched")}


def test_a_row_paired_by_name_is_not_paired_again_by_normalised_name() -> None:
    # main/loss_1 normalises to "loss", the name of a row already paired exactly
    got = _pairs([("loss", 4, "", "activation"), ("main/loss_1", 4, "", "activation")],
                 [("loss", 4, "", "activation")])
    assert got == {("loss", "loss", "exact"), ("main/loss_1", None, "unmatched")}
