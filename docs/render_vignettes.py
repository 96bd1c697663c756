"""Render the vignette gallery: run each vignette small and cache what it prints and draws.

The Sphinx build never runs a vignette; it only includes what this script cached in
``docs/gallery/`` (committed). Each vignette runs as ``tests/test_vignettes.py`` runs it
(``--small``, headless Matplotlib, on its simulated data), writing its tables and figures
into ``docs/gallery/<vignette>/``; its printed output goes to ``output.txt`` there and a
page ``docs/gallery/<vignette>.md`` shows the vignette's own text, the printed tables,
the figures and the script.

Usage::

    python docs/render_vignettes.py                    # every vignette (minutes)
    python docs/render_vignettes.py 02_noisy_label_calibration   # chosen ones
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "docs" / "gallery"
VIGNETTES = sorted((ROOT / "vignettes").glob("[0-9]*.py"))


def markdown_cells(source: str) -> list[str]:
    """The text of the ``# %% [markdown]`` cells of a percent-format script, in order.

    Parameters
    ----------
    source : str
        The script.

    Returns
    -------
    list of str
        Each cell's Markdown, the leading ``# `` removed.
    """
    cells, current = [], None
    for line in source.splitlines():
        if line.startswith("# %%"):
            if current is not None:
                cells.append("\n".join(current).strip())
            current = [] if "[markdown]" in line else None
        elif current is not None:
            if not line.startswith("#"):
                cells.append("\n".join(current).strip())
                current = None
            else:
                current.append(line[2:] if line.startswith("# ") else line[1:])
    if current is not None:
        cells.append("\n".join(current).strip())
    return [c for c in cells if c]


def run(script: Path) -> tuple[str, float]:
    """Run one vignette with ``--small`` into its gallery folder; its output and seconds."""
    out = GALLERY / script.stem
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    res = subprocess.run([sys.executable, str(script.relative_to(ROOT)), "--small", "--out",
                          str(out.relative_to(ROOT))], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{script.name} failed:\n{res.stdout}\n{res.stderr}")
    text = res.stdout.replace(str(ROOT) + os.sep, "")
    (out / "output.txt").write_text(text)
    return text, seconds


def page(script: Path, seconds: float) -> str:
    """The gallery page of one vignette (Markdown, for MyST)."""
    cells = markdown_cells(script.read_text())
    intro = cells[0] if cells else f"# {script.stem}"
    if not intro.startswith("# "):
        intro = f"# {script.stem}\n\n{intro}"
    out = GALLERY / script.stem
    lines = [intro, "",
             f"Rendered by `python docs/render_vignettes.py` with `--small` on the simulated "
             f"data ({seconds:.0f} s on the machine that rendered it); run the script "
             f"yourself for the full sizes (`python vignettes/{script.name}`).", ""]
    figures = sorted(out.glob("*.png"))
    if figures:
        lines += ["## Figures", ""]
        for fig in figures:
            lines += [f"```{{figure}} {script.stem}/{fig.name}", ":width: 100%", "",
                      f"`{fig.name}`", "```", ""]
    lines += ["## What it prints", "",
              f"```{{literalinclude}} {script.stem}/output.txt", ":language: text", "```", ""]
    written = sorted(p.name for p in out.iterdir() if p.suffix not in (".png",)
                     and p.name != "output.txt")
    if written:
        lines += ["It also writes " + ", ".join(f"`{n}`" for n in written) + ".", ""]
    if len(cells) > 1:
        lines += ["## The steps", ""]
        for cell in cells[1:]:
            lines += [re.sub(r"^(#+) ", r"#\1 ", cell, flags=re.M), ""]
    lines += ["## The script", "",
              f"```{{literalinclude}} ../../vignettes/{script.name}", ":language: python",
              "```", ""]
    return "\n".join(lines)


def index(scripts: list[Path]) -> str:
    """The gallery's index page, listing every rendered vignette."""
    lines = ["# Vignette gallery", "",
             "Runnable analysis scripts, one per workflow (`vignettes/`), rendered small on "
             "simulated data. Re-render with `python docs/render_vignettes.py`; the "
             "documentation build only includes these cached outputs.", "",
             "```{toctree}", ":maxdepth: 1", ""]
    lines += [s.stem for s in scripts if (GALLERY / f"{s.stem}.md").exists()]
    return "\n".join(lines + ["```", ""])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="vignette stems (default: all)")
    args = ap.parse_args(argv)
    chosen = [s for s in VIGNETTES if not args.names or s.stem in args.names]
    if args.names and len(chosen) != len(args.names):
        ap.error(f"unknown vignette among {args.names}; have {[s.stem for s in VIGNETTES]}")
    for script in chosen:
        _, seconds = run(script)
        (GALLERY / f"{script.stem}.md").write_text(page(script, seconds))
        print(f"{script.name}: {seconds:.0f} s")
    (GALLERY / "index.md").write_text(index(VIGNETTES))


if __name__ == "__main__":
    main()
