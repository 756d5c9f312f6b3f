"""Sphinx configuration of Ember's documentation site (``nox -s docs``, or
``python -m sphinx -W --keep-going -b html docs docs/_build/html`` in an environment holding
the packages and the docs requirements of the noxfile)."""

import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(DOCS, "_ext"))

from local_inventories import NUMPY_URL, PYTHON_URL, python_inventory, write_numpy_inventory  # noqa: E402

import ember  # noqa: E402

project = "Ember"
author = "the Ember authors"
copyright = "the Ember authors"
release = ember.__version__.split("+")[0] if "+" in ember.__version__ else ember.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "myst_nb",
    "ember_api_pages",
    "dataclass_signatures",
    "readme_sections",
]

exclude_patterns = ["_build", "README.md", "**.ipynb_checkpoints"]
# Every Python cross-reference must resolve (under -W an unresolved one fails the build), but
# these: types that signatures or napoleon's Raises sections name, with no page to link to.
nitpicky = True
nitpick_ignore = [
    # private classes of ember.fx that annotations name (Graph.nodes, Graph.inserting_before/after)
    ("py:class", "ember.fx.graph._node_list"),
    ("py:class", "ember.fx.graph._InsertPoint"),
    # internals of ember.fx annotations name, as torch.fx's do; their modules have no page
    ("py:class", "ember.fx.proxy.TracerBase"),  # the tracer a Proxy records to
    ("py:class", "ember.fx.subgraph_rewriter.Match"),  # what replace_pattern returns
    ("py:class", "Argument"),  # ember.fx.node's type alias (torch.fx's Argument), shown by its bare name
    # MobileNetV3's blocks configuration, not exported (nor is torchvision's)
    ("py:class", "ember_vision.models.mobilenetv3.InvertedResidualConfig"),
    # third-party classes without an offline inventory: the tokenizers library's engine
    # in the signatures of ember_text's tokenizer, and the exception jinja2 raises from a chat template
    ("py:class", "tokenizers.Tokenizer"),
    ("py:exc", "jinja2.TemplateError"),
]
html_theme = "furo"
html_title = "Ember"
# quotes and dots as written: the README's tables and the docstrings are code-like text
smartquotes = False
templates_path = []

# autodoc: docstrings as written (Google-style sections through napoleon), members in source order
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
# a class without a docstring of its own shows none, not its base's (Enum's, Module's)
autodoc_inherit_docstrings = False
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# Links to Python's and numpy's documentation, from inventories on this machine (no network).
intersphinx_mapping = {
    "python": (PYTHON_URL, python_inventory()),
    "numpy": (NUMPY_URL, write_numpy_inventory(os.path.join(DOCS, "_build", "inventories", "numpy.inv"))),
}

# Guides are MyST notebooks executed at every build: a guide whose code fails fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 300
nb_execution_in_temp = True
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
html_static_path = ["_static"]
html_favicon = "_static/ember.svg"
html_logo = "_static/ember.svg"
