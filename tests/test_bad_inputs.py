"""The bad-input catalogue: every bad or edge input gets a clear error naming the argument, an
explicit status on the result, or a warning.

Cases live per area in ``tests/bad_inputs_*.py`` as ``CASES`` lists of
``(case_id, thunk, kind, expected, pattern)`` tuples:

- ``kind="raises"``: the call raises exactly ``expected`` and the message matches ``pattern``
  (the name of the offending argument);
- ``kind="status"``: the call returns a result whose ``status`` is not ``"ok"`` and whose
  status and message match ``pattern``;
- ``kind="warns"``: the call emits a warning of class ``expected`` matching ``pattern``.
"""

import importlib
import re
import warnings
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
_MODULES = sorted(p.stem for p in _HERE.glob("bad_inputs_*.py"))


def _collect():
    cases = []
    for name in _MODULES:
        for case in importlib.import_module(name).CASES:
            case_id, thunk, kind, expected, pattern = case
            cases.append(pytest.param(thunk, kind, expected, pattern, id=case_id))
    return cases


CASES = _collect()


def test_catalogue_is_large_and_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    assert len(ids) >= 150


@pytest.mark.parametrize(("thunk", "kind", "expected", "pattern"), CASES)
def test_bad_input(thunk, kind, expected, pattern):
    assert kind in ("raises", "status", "warns")
    if kind == "raises":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                thunk()
        assert type(info.value) is expected, f"{type(info.value).__name__}: {info.value}"
        assert re.search(pattern, str(info.value)), str(info.value)
    elif kind == "status":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = thunk()
        status = str(result.status)
        assert status != "ok"
        assert re.search(pattern, f"{status} {getattr(result, 'message', '')}"), (
            status, getattr(result, "message", ""))
    else:
        with pytest.warns(expected, match=pattern):
            thunk()
