"""`vllm-sizer` dispatcher. Each subcommand lives in its own module and registers its parser."""

from __future__ import annotations

import argparse
import os
import sys

from . import audit, check, estimate, run


def build_parser() -> argparse.ArgumentParser:
    # run as a kubectl plugin (kubectl-vllm_sizer), usage lines say `kubectl vllm-sizer`
    as_plugin = os.path.basename(sys.argv[0]).startswith("kubectl-")
    parser = argparse.ArgumentParser(
        prog="kubectl vllm-sizer" if as_plugin else "vllm-sizer",
        description="Size vLLM pods: peak memory from the vLLM command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    estimate.register(sub)
    check.register(sub)
    run.register(sub)
    audit.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
