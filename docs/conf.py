"""Sphinx configuration of the noisycal documentation (offline build, no downloads).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (or
``make -C docs html``). The API reference pages are written from the packages'
``__all__`` by ``api_reference.py``, and the benchmark results pages from the benchmarks'
published output (``benchmarks/results/``) by ``benchmark_pages.py``, when this file is
read, at the start of every build; the vignette gallery only includes the outputs that
``python docs/render_vignettes.py`` cached in ``docs/gallery/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's noisycal, installed or not
sys.path.insert(0, str(HERE))

import api_reference  # noqa: E402
import benchmark_pages  # noqa: E402

import noisycal  # noqa: E402

# the API reference pages, written from the packages' __all__ before Sphinx looks for
# source files (at builder-inited the file list and autosummary's stubs are already set)
api_reference.write()
# the benchmark results pages (docs/benchmarks/ and benchmarks.md), from the published JSON
benchmark_pages.write()

project = "noisycal"
author = "the noisycal developers"
copyright = "2026, the noisycal developers"  # noqa: A001
release = noisycal.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "gallery/*/*.md"]  # a vignette's own Markdown outputs
templates_path = ["_templates"]

# no network at build time: no intersphinx, no remote images, MathJax only when a page
# uses math (a reader's browser then fetches it; the pages read fine without it)
autosummary_generate = False  # api_reference.py writes the object pages
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"noisycal {release}"
html_static_path = ["_static"]
html_css_files = ["noisycal.css"]
html_show_sourcelink = False

