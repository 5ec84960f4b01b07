"""The typer application, the error-to-exit-code mapping, and the global options.

Every command module registers itself on :data:`app` when imported; keep their heavy imports (models,
rich Live, onnxruntime) inside the command functions so that ``hive --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import traceback

import typer

from hive import __version__
from hive.errors import HiveError

app = typer.Typer(
    name="hive",
    help="A hive of read-only investigator bees sharing a judge-gated board.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: rich's help formatter costs ~250 ms of imports on every `hive --help`.
    rich_markup_mode=None,
)

_COMMAND_MODULES = (
    "hive.cli.runs",
    "hive.cli.judge",
    "hive.cli.start",
    "hive.cli.observe",
)

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hive {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors (anywhere on the command line)."),
) -> None:
    _state["debug"] = _state["debug"] or debug


class _WarningsToStderr(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        print(f"hive: warning: {record.getMessage()}", file=sys.stderr)


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "unknown error"


def _without_debug(args: list[str]) -> tuple[list[str], bool]:
    """``--debug`` is taken from anywhere before a ``--``, so that no subcommand has to declare it."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != "--debug"] + args[end:]
    return kept, len(kept) < len(args)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the exit code (0 ok, 1 run failed, 2 usage, 130 interrupted)."""
    for name in _COMMAND_MODULES:
        importlib.import_module(name)
    logger = logging.getLogger("hive")
    if not any(isinstance(h, _WarningsToStderr) for h in logger.handlers):  # main() may run many times
        logger.addHandler(_WarningsToStderr())
    logger.propagate = False
    command = typer.main.get_command(app)
    args, _state["debug"] = _without_debug(sys.argv[1:] if argv is None else argv)
    if not args:  # bare `hive`: the help on stdout, and the exit code of a usage error
        with contextlib.suppress(typer.Exit):
            command.main(args=["--help"], prog_name="hive", standalone_mode=False)
        return 2
    try:
        result = command.main(args=args, prog_name="hive", standalone_mode=False)
    except SystemExit as e:
        # A reader that went away (`hive show | head -1`) had what it wanted; click would exit 1, the code of a
        # failed run.
        if isinstance(e.__context__, BrokenPipeError):
            return _reader_gone()
        raise
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except typer.Abort:
        return 130
    except typer.TyperException as e:
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        print(f"hive: error: {_one_line(message)}", file=sys.stderr)
        return 2
    except HiveError as e:
        if _state["debug"]:
            traceback.print_exc()
        print(f"hive: error: {_one_line(str(e))}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("hive: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    return result if isinstance(result, int) else 0


def _reader_gone() -> int:
    from hive.observe.stdout import discard_stdout  # not on `hive --help`'s path

    discard_stdout()
    return 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
