"""The ``selector`` command line: the entry point registers the commands, each a module of
selector/commands/ named as the command is, which owns its options, its call and its
printing.

A command's module is imported only when that command runs (or when --help lists them
all), and each imports what it needs when it runs: `selector select`, which runs on every
push, loads click, rich and small modules of ours before the compiled core starts on the
binary, and never pandas (:mod:`selector.arrow_without_pandas`).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

import click

from perf_selector.collectors.errors import UserError
from perf_selector.selector.temporaries import remove_all

# command name -> (module of selector/commands/, the click command it defines)
COMMANDS = {
    "functions": ("functions", "functions"), "diff": ("diff", "diff"), "init": ("init", "init_command"),
    "doctor": ("doctor", "doctor_command"), "calibrate": ("calibrate", "calibrate_command"),
    "collect": ("collect", "collect_command"), "confirm": ("confirm", "confirm_command"),
    "labels": ("labels", "labels_command"), "features": ("features", "features_command"),
    "pack": ("pack", "pack_command"),
    "backtest": ("backtest", "backtest_command"), "train": ("train", "train_command"),
    "evaluate": ("evaluate", "evaluate_command"), "report": ("report", "report_command"),
    "select": ("select", "select_command"), "hook": ("hook", "hook_group"), "record": ("record", "record_command"),
    "bisect": ("bisect", "bisect_command"), "demo": ("demo", "demo"),
}


class _Group(click.Group):
    """Loads a command's module when it runs, and turns a UserError into one line on stderr
    and exit status 2, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, command = COMMANDS[name]
        return getattr(importlib.import_module(f"perf_selector.selector.commands.{module}"), command)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as error:
            click.echo(f"selector: error: {error}", err=True)
            ctx.exit(error.exit_status)
        except ModuleNotFoundError as error:
            from perf_selector.selector.extras import missing_extra_error

            missing = missing_extra_error(error, f"selector {ctx.invoked_subcommand}")
            if missing is None:
                raise
            click.echo(f"selector: error: {missing}", err=True)
            ctx.exit(missing.exit_status)
        except KeyboardInterrupt as interrupted:
            click.echo("selector: interrupted; what was stored is kept, run the same command again to resume", err=True)
            ctx.exit(143 if isinstance(interrupted, Terminated) else 130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="perf-selector", prog_name="selector")
def cli() -> None:
    """Predict which benchmarks a commit changes, so only those run.

    Start with `selector demo`; on your project, `selector init` writes a
    selector.toml, `selector doctor` says what is missing, then `selector calibrate`
    and `selector collect`. `selector functions` and `selector diff` show what the
    static analysis sees in any x86-64 ELF binary.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout, `kill`): unwound as an interrupt is, so that what the command holds
    (worktrees, temporary copies) is let go and removed."""


def _terminated(signum, frame) -> None:
    raise Terminated()


def main() -> None:
    """The program: runs the command, then ends the process without tearing the interpreter down.

    Tearing it down after a command that read or wrote the store aborts now and then in Arrow's
    C++ teardown ("terminate called without an active exception", exit 134 after every result
    was written: apache/arrow#34314): seen after a collection that forked workers, a calibration,
    a failed store read, and `collect --failures` (3 of 40 runs on a loaded machine).  Every
    command has finished by then: its output is printed, and the worktrees, pools, clients and
    tracking runs it used are closed by their own `with` blocks; what is left is freeing modules
    (which takes time too: the push path waits for it).  So once the command has ended, `main`
    removes the temporary copies, flushes the output and exits."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        cli(prog_name="selector")
    except SystemExit as done:
        # The command has ended: a stop now would only cut its clean-up short (a SIGTERM met
        # here left select's binary copy in the temporary directory, and a traceback).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        remove_all()  # os._exit below runs no atexit function
        if done.code is None or isinstance(done.code, int):
            _flush(sys.stdout)
            _flush(sys.stderr)
            os._exit(done.code or 0)
        raise


def _flush(stream) -> None:
    """Flush an output stream; a reader gone (`selector select | head`) is no failure of the command."""
    try:
        stream.flush()
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
