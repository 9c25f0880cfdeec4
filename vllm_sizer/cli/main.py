"""`vllm-sizer` dispatcher. Each subcommand lives in its own module and registers its parser."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand module → the extra its dependencies come from
SUBCOMMANDS = {"estimate": None, "check": "cli", "run": "operator", "audit": "operator"}


def build_parser() -> argparse.ArgumentParser:
    # run as a kubectl plugin (kubectl-vllm_sizer), usage lines say `kubectl vllm-sizer`
    as_plugin = os.path.basename(sys.argv[0]).startswith("kubectl-")
    parser = argparse.ArgumentParser(
        prog="kubectl vllm-sizer" if as_plugin else "vllm-sizer",
        description="Size vLLM pods: peak memory from the vLLM command line.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, extra in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ImportError as exc:  # an extra that is not installed: say which
            if extra is None or (exc.name or "").split(".")[0] in ("", "vllm_sizer"):
                raise  # our own import error is a bug, not a missing extra
            _missing(sub, name, extra, exc)
            continue
        module.register(sub)
    return parser


def _missing(
    sub: argparse._SubParsersAction,
    name: str,
    extra: str | None,
    exc: ImportError,
) -> None:
    # Whatever follows is taken as is: with no prefix character, `--role webhook` is not an
    # unrecognized option but more of `rest`, and the user reads which extra to install.
    p = sub.add_parser(
        name,
        help=f"(needs: pip install 'vllm-sizer[{extra}]')",
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)

    def fail(_args: argparse.Namespace) -> int:
        print(
            f"vllm-sizer {name}: needs the '{extra}' extra ({exc.name or exc} is not "
            f"installed): pip install 'vllm-sizer[{extra}]'",
            file=sys.stderr,
        )
        return 2

    p.set_defaults(func=fail)


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
        print(
            f"vllm-sizer {getattr(args, 'command', '')}: internal error "
            f"({type(exc).__name__}: {str(exc)[:300]})",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
