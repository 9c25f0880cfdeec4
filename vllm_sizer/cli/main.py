"""`vllm-sizer` dispatcher. Each subcommand lives in its own module and registers its parser."""

from __future__ import annotations

import argparse
import sys

from . import check, estimate, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-sizer",
        description="Size vLLM pods: peak memory from the vLLM command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    estimate.register(sub)
    check.register(sub)
    run.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 fine; 1 denied (check); 2 bad input or an internal error, said on stderr
    (never a traceback: 1 must keep meaning "denied")."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - see the docstring
        print(f"vllm-sizer {getattr(args, 'command', '')}: internal error "
              f"({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
