"""The binned backends (item table, streamed sums, Dask row blocks) behind one interface:
the choice of backend, and the same numbers from each."""

import numpy as np
import pytest

import noisycal as nc
from noisycal.metrics.binned.backend import (
    BinnedBackend,
    BinnedRequest,
    DaskBlocks,
    ItemTable,
    StreamedSums,
    choose_backend,
)
from noisycal.metrics.binned.estimate import binned_estimate

INT = nc.intervals


def _data(n=600, K=3, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(K), size=n)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)[:, :-1]).sum(axis=1)
    return P, y


def _request(interval=None, *, strategy="uniform", cluster=None, needs_items=False,
             kind="top_label"):
    return BinnedRequest(kind, 10, strategy, False, interval, 0, cluster, "ece", needs_items)


@pytest.mark.parametrize("request_, backend", [
    (_request(), StreamedSums),
    (_request(INT.Inversion()), StreamedSums),
    (_request(strategy="quantile"), ItemTable),
    (_request(INT.Inversion(), strategy="quantile"), StreamedSums),
    (_request(INT.Inversion(), cluster=np.arange(600) // 2), ItemTable),
    (_request(INT.Bootstrap()), ItemTable),
    (_request(needs_items=True), ItemTable),
    (_request(INT.Inversion(), needs_items=True), ItemTable),
])
def test_the_backend_serving_each_request(request_, backend):
    P, y = _data()
    chosen = choose_backend(P, y, None, None, request_)
    assert type(chosen) is backend and isinstance(chosen, BinnedBackend)
    assert chosen.name == {ItemTable: "items", StreamedSums: "streamed"}[backend]


def test_dask_blocks_serve_dask_input():
    da = pytest.importorskip("dask.array")
    from noisycal.metrics.binned.dask import row_blocks

    P, y = _data()
    blocks = row_blocks(da.from_array(P, chunks=(200, 3)), y, None)
    chosen = choose_backend(None, None, None, blocks, _request(INT.Bootstrap()))
    assert type(chosen) is DaskBlocks and isinstance(chosen, BinnedBackend)
    binned, sums, form, streamed = chosen.gather(_request(INT.Bootstrap()))
    assert binned.data.shape == (1, 0, 3) and sums.shape == (1, 10, 3) and form is None
    assert "plan" in streamed


@pytest.mark.parametrize("interval", [None, INT.Inversion(n_boot=200)])
def test_the_backends_give_the_same_estimate(interval):
    P, y = _data(seed=1)
    request = _request(interval)
    out = []
    for backend in (ItemTable(P, y, None), StreamedSums(P, y, None)):
        binned, sums, form, streamed = backend.gather(request)
        out.append(binned_estimate(binned, ["top_label"], name="ECE", reduce="ece",
                                   norm="l1", debias=False, interval=interval, level=0.9,
                                   seed=3, cluster=None, details={}, sums=sums, form=form,
                                   streamed=streamed,
                                   estimator="plug-in" if interval is None else
                                   "median-unbiased"))
    table, streamed_ = out
    assert table.value == pytest.approx(streamed_.value, rel=1e-12, abs=1e-15)
    assert (table.interval is None) == (streamed_.interval is None)
    if interval is not None:
        assert table.interval == pytest.approx(streamed_.interval, rel=1e-10, abs=1e-14)
    # and nc.ece is the same dispatch
    assert nc.ece(P, y, n_bins=10, interval=interval, seed=3).value == \
        pytest.approx(streamed_.value, rel=1e-12, abs=1e-15)
