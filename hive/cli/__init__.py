"""The ``hive`` command line. Exit codes and printing live here and nowhere else."""

from hive.cli.app import app, main, run

__all__ = ["app", "main", "run"]
