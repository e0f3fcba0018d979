"""``python -m kernel_plugins.cli``: the same as the ``kernel-plugins`` command."""

import sys

from . import main

sys.exit(main())
