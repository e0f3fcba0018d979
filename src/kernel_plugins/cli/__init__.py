"""The ``kernel-plugins`` command line (one module per command).

The tool distributions (kernel-plugins-check, kernel-plugins-benchmark) write their
commands with the helpers exported here.
"""

from ._args import bounded, path_text
from ._output import CommandError, clean, print_json
from .main import add_device_option, add_revision_options, add_wide_option, main

__all__ = ["main", "CommandError", "bounded", "clean", "path_text", "print_json", "add_device_option",
           "add_revision_options", "add_wide_option"]
