"""``python -m bench NAME [options]``: run one benchmark; ``python -m bench -h`` lists them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from . import memory, run

# To add a benchmark, write a module like memory.py and list it here.
BENCHMARKS: dict[str, ModuleType] = {"memory": memory, "run": run}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the chosen benchmark; return its exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    commands = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, module in BENCHMARKS.items():
        command = commands.add_parser(name, help=module.SUMMARY, description=module.__doc__)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
