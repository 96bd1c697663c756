"""Every example in a docstring runs: the doctests of each noisycal module."""

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import noisycal


def _modules():
    import noisycal.models

    names = ["noisycal"]
    for info in pkgutil.walk_packages(noisycal.__path__, prefix="noisycal."):
        if ".experiments" not in info.name:
            names.append(info.name)
    # noisycal.models is mapped to the top-level models/ folder, which the walk above does
    # not reach
    names += [info.name for info in
              pkgutil.walk_packages(noisycal.models.__path__, prefix="noisycal.models.")]
    return sorted(set(names))


MODULES = _modules()


def test_models_are_walked_too():
    assert "noisycal.models.dawid_skene" in MODULES
    assert "noisycal.engines.em.dawid_skene" in MODULES


def test_doctests_exist():
    # guards the runner itself: the examples in the public docstrings are found
    finder = doctest.DocTestFinder()
    n_examples = sum(len(t.examples) for name in MODULES
                     for t in finder.find(importlib.import_module(name)))
    assert n_examples >= 10


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    with np.printoptions(precision=4, suppress=True, legacy="1.25"):
        result = doctest.testmod(module, optionflags=flags, report=True,
                                 extraglobs={"np": np, "nc": noisycal})
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
