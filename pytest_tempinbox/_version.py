"""The package's version, in one place.

The package metadata, ``--version`` and ``GET /api/info`` read it, and the
package re-exports it as ``pytest_tempinbox.__version__``.
"""

__version__ = "0.1.0"
