"""The coordinator: one run of the hive, from angles to answer."""

from hive.coordinator.options import StartOptions
from hive.coordinator.run import Coordinator, RunResult

__all__ = ["Coordinator", "RunResult", "StartOptions"]
