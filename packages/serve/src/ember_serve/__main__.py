"""``python -m ember_serve``: the same as ``ember-serve``."""

import sys

from .cli import serve_main

sys.exit(serve_main())
