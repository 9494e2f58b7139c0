"""The tool's own version, read from the installed distribution."""

from __future__ import annotations

from importlib import metadata

try:
    TOOL_VERSION = metadata.version("tuned-kernels")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    TOOL_VERSION = "0+unknown"
