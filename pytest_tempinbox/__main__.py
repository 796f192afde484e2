"""Run the disposable inbox server: ``python -m pytest_tempinbox --help``."""

from ._cli import main

raise SystemExit(main(prog="python -m pytest_tempinbox"))
