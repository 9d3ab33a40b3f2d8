"""The gallery's image scraper: sphinx-gallery's plain Matplotlib save (``fig.savefig(path)``,
no ``bbox_inches``, so a legend outside the figure would be cut off exactly as a user's own save
would cut it) that also records, in each PNG's ``Description`` text chunk, where every legend
landed in the saved image.

The record is JSON: ``{"width": px, "height": px, "axes": [{"labelled": n, "legend":
[x0, y0, x1, y1] | null, "entries": [...]}, ...]}`` with legend boxes in image pixels from the
top-left corner. The site's tests (``tests/test_site.py``) read it back from the built site and
check that every axes with labelled artists shows a legend lying inside its image and drawn
there (its box is not blank).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath

KEY = "Description"


def legend_record(fig) -> dict:
    """Where each axes' legend lies in the figure as last drawn, in image pixels."""
    width, height = fig.canvas.get_width_height(physical=True)
    axes = []
    for ax in fig.axes:
        handles, _ = ax.get_legend_handles_labels()
        legend = ax.get_legend()
        box = entries = None
        if legend is not None and legend.get_visible():
            ext = legend.get_window_extent()
            box = [ext.x0, height - ext.y1, ext.x1, height - ext.y0]  # top-left origin
            entries = [t.get_text() for t in legend.get_texts()]
        axes.append({"labelled": len(handles), "legend": box, "entries": entries or []})
    return {"width": width, "height": height, "axes": axes}


def scrape(block, block_vars, gallery_conf, **kwargs) -> str:
    """Save every open figure as sphinx-gallery's Matplotlib scraper does, with its record."""
    import matplotlib.pyplot as plt
    from sphinx_gallery.scrapers import figure_rst

    paths = []
    images = block_vars["image_path_iterator"]  # unbounded: one name per figure asked for
    for number, path in zip(plt.get_fignums(), images, strict=False):
        fig = plt.figure(number)
        path = PurePosixPath(path)
        fig.savefig(path, **kwargs)  # draws at the saved size: the record below matches the file
        record = legend_record(fig)
        fig.savefig(path, metadata={KEY: json.dumps(record)}, **kwargs)
        paths.append(path)
    plt.close("all")
    return figure_rst(paths, gallery_conf["src_dir"])
