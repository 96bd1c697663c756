"""Documentation contracts: numpydoc Parameters sections and citations users can follow."""


import importlib
import inspect
import pkgutil
import re

import pytest

import noisycal
import noisycal.models


def _public_modules():
    names = ["noisycal"]
    names += [i.name for i in pkgutil.walk_packages(noisycal.__path__, prefix="noisycal.")]
    names += [i.name for i in
              pkgutil.walk_packages(noisycal.models.__path__, prefix="noisycal.models.")]
    return sorted(n for n in set(names) if not any(p.startswith("_") for p in n.split(".")))


MODULES = _public_modules()


def _public_callables():
    seen, out = set(), []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            members = []
            if inspect.isfunction(obj):
                members = [(f"{name}.{attr}", obj)]
            elif inspect.isclass(obj):
                members = [(f"{name}.{attr}", obj)] + [
                    (f"{name}.{attr}.{k}", v) for k, v in vars(obj).items()
                    if inspect.isfunction(v) and not k.startswith("_")]
            for qualname, member in members:
                if id(member) not in seen:
                    seen.add(id(member))
                    out.append((qualname, member))
    return out


CALLABLES = _public_callables()


def _n_arguments(member):
    try:
        sig = inspect.signature(member)
    except (TypeError, ValueError):
        return 0
    return sum(p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def test_the_walk_finds_the_public_surface():
    names = {q for q, _ in CALLABLES}
    assert {"noisycal.ece", "noisycal.targets.corrected", "noisycal.DawidSkene.fit",
            "noisycal.models.dawid_skene.dawid_skene"} <= names


def test_public_callables_with_two_or_more_arguments_have_parameters_sections():
    missing = []
    for qualname, member in CALLABLES:
        if _n_arguments(member) < 2:
            continue
        doc = inspect.getdoc(member) or ""
        ok = "Parameters" in doc
        if inspect.isclass(member):  # a dataclass documents its fields as Attributes
            ok = ok or "Attributes" in doc or "Parameters" in (inspect.getdoc(member.__init__)
                                                                or "")
        if not ok:
            missing.append(qualname)
    assert not missing, missing


_INTERNAL = re.compile(r"paper[ _-]?00\d|spec[- ]?0\d\d|spec §|§ ?\d|\[GAP\]", re.I)


@pytest.mark.parametrize("name", MODULES)
def test_docstrings_cite_papers_by_title(name):
    # users do not have the project's paper files: no "paper 003", "spec §3", "[GAP]"
    module = importlib.import_module(name)
    offenders = [n for n, obj in [(name, module)] + [
        (k, v) for k, v in vars(module).items()
        if (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__ == name]
        if _INTERNAL.search(inspect.getdoc(obj) or "")]
    assert not offenders, offenders


def test_docstrings_cite_by_title_and_say_what_the_code_does():
    from noisycal.annotators import DawidSkene, soft_labels
    from noisycal.engines.moments import hui_walter_moments

    fit_doc = inspect.getdoc(DawidSkene.fit)
    assert "reaches it" not in fit_doc and "strictly greater than it" in fit_doc
    src = inspect.getsource(soft_labels)
    assert "[000]" not in src
    doc = inspect.getdoc(hui_walter_moments)
    assert "Eq. 13" in doc and "Noisy-Label Calibration with Multiple Unreliable Labels" in doc
