from hive.cli import run

run()
