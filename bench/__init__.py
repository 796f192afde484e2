"""Benchmarks of pytest-tempinbox, run by hand (not in CI): ``python -m bench NAME``.

Each benchmark is a module here with a one-line ``SUMMARY``, an
``add_arguments(parser)`` and a ``run(args) -> int``, listed in
:data:`bench.__main__.BENCHMARKS`. Results go to ``bench/results/NAME.json``.
"""
