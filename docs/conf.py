"""Sphinx configuration of the provider's documentation site (``make docs``).

Built offline with warnings as errors: no intersphinx, no asset from a CDN (the theme, the
search and the copy button ship their own files). Pages are MyST Markdown, the API
reference is reStructuredText generated from the docstrings (``docs/_ext/namelookup_docs.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]
# autodoc imports the provider, and with it Airflow, which writes an airflow.cfg into AIRFLOW_HOME
# (~/airflow when unset): keep it in the build directory instead.
os.environ.setdefault("AIRFLOW_HOME", str(DOCS / "_build" / "airflow-home"))

from airflow_provider_namelookup import __version__  # noqa: E402

project = "airflow-provider-namelookup"
author = "The airflow-provider-namelookup authors"
copyright = "Apache-2.0"  # the footer line
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
    "namelookup_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "screenshots"]
templates_path: list[str] = []

# MyST: ::: fences, and an anchor for every heading down to #### so pages link to sections.
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4

# autodoc: the docstrings as written (reST with :param: lines), members in source order.
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "signature"
# Short names in the API pages and their contents (each page's headings already name the module).
add_module_names = False
toc_object_entries_show_parents = "hide"

html_theme = "furo"
html_title = f"Name Lookup provider {release}"
html_static_path = ["_static"]
html_css_files = ["namelookup.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {"navigation_with_keys": True}

# The copy button leaves out prompts and the output of console sessions.
copybutton_prompt_text = r"^(\$ |>>> |\.\.\. )"
copybutton_prompt_is_regexp = True

pygments_style = "friendly"
pygments_dark_style = "monokai"
