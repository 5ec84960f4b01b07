"""Check that the local judge's features are unchanged against a reference commit's ``features.py``.

    .venv/bin/python scripts/check_judge_features.py [--ref COMMIT] [--texts FILE.jsonl ...]

The trained heads in ``hive/judge/local/data/heads.npz`` read these features, so a speed-up of the feature
code must give the same numbers. The script loads ``hive/judge/local/features.py`` as it was at ``--ref``
(``git show``), computes the publish features (cue features and hashed n-grams) and the lexical sets deliver
and relate read (content words, identifiers) for every text, with both versions, and exits 1 if any
feature differs by 1e-9 or more or any set differs. Default texts: every narration file
``hive/judge/local/data/narration/*-notes.jsonl``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hive.judge.local import features  # noqa: E402

FEATURES_PATH = "hive/judge/local/features.py"
TOLERANCE = 1e-9


def reference_module(ref: str, workdir: Path) -> ModuleType:
    source = subprocess.run(["git", "show", f"{ref}:{FEATURES_PATH}"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    path = workdir / "reference_features.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("reference_features", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_texts(paths: list[Path]) -> list[str]:
    texts = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                texts.append(row.get("text") or row.get("note") or "")
    return list(dict.fromkeys(t for t in texts if t))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="0fe4d37", help="commit whose features.py is the reference")
    parser.add_argument("--texts", type=Path, nargs="*", default=None)
    args = parser.parse_args(argv)
    paths = args.texts or sorted((ROOT / "hive/judge/local/data/narration").glob("*-notes.jsonl"))
    texts = read_texts(paths)
    with tempfile.TemporaryDirectory() as workdir:
        reference = reference_module(args.ref, Path(workdir))
    new, old = features.text_matrix(texts), reference.text_matrix(texts)
    diff = np.abs(new - old).max(axis=1) if len(texts) else np.zeros(0)
    features_off = [i for i, d in enumerate(diff) if not d < TOLERANCE]
    sets_off = [i for i, t in enumerate(texts)
                if features.content_words(t) != reference.content_words(t)
                or features.identifiers(t) != reference.identifiers(t)]
    print(json.dumps({"ref": args.ref, "texts": len(texts), "columns": int(new.shape[1]) if len(texts) else 0,
                      "max_abs_diff": float(diff.max()) if len(texts) else 0.0,
                      "bit_identical": bool(np.array_equal(new, old)),
                      "texts_with_feature_diff": len(features_off), "texts_with_set_diff": len(sets_off)}))
    for i in (features_off + sets_off)[:5]:
        print(f"differs: {texts[i][:120]!r}", file=sys.stderr)
    return 1 if features_off or sets_off else 0


if __name__ == "__main__":
    raise SystemExit(main())
