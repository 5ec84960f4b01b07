import os
import tempfile
import unittest

from export.nightly import run_export


class NightlyExportTest(unittest.TestCase):
    def test_every_row_is_written(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            read, written = run_export(os.path.join(tmp, "out.csv"))
        self.assertEqual(written, read)


if __name__ == "__main__":
    unittest.main()
