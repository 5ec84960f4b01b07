"""The gate heads: small calibrated logistic models over embeddings and cue features.

``heads.npz`` (built by ``scripts/build_heads.py`` from the labelled examples in ``data/``) holds, per head,
the feature standardisation, the weights and the calibration. Input assembly lives here, shared by the
build script and the tier, so training and serving see the same features.

Heads:
- ``kind`` (softmax over other/finding/dead_end/decision/blocker) and ``news`` (logistic) read the note's
  embedding plus its cue features;
- ``useful`` (logistic) reads note↔focus similarity and overlap plus the note's kind/news probabilities;
- ``related`` (logistic) reads earlier↔later similarity and overlap plus same-bee; it only separates
  "related" from ``none``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hive.judge.local import features as F
from hive.judge.local.embedder import LocalModelError, Vector

Array = npt.NDArray[np.float64]

KINDS = ("other", "finding", "dead_end", "decision", "blocker")
HEADS_FILE = "heads.npz"



def publish_inputs(vectors: list[Vector], texts: list[str]) -> Array:
    """Rows of [embedding, cue features] for the publish heads."""
    return np.hstack([np.asarray(vectors, dtype=np.float64), F.text_matrix(texts)])


def deliver_inputs(cos: float, note: str, focus: str, note_probs: dict[str, float]) -> list[float]:
    note_words, focus_words = F.content_words(note), F.content_words(focus)
    jaccard, overlap, focus_recall = F.overlap(note_words, focus_words)
    ident_recall = F.overlap(F.identifiers(note) | note_words, F.identifiers(focus) | focus_words)[2]
    p_news = note_probs["news"]
    return [
        cos, jaccard, overlap, focus_recall, ident_recall, p_news, note_probs["other"], note_probs["blocker"],
        p_news * cos, p_news * focus_recall,
    ]


def relate_inputs(
    cos: float, earlier: str, later: str, same_bee: bool, earlier_probs: dict[str, float],
    later_probs: dict[str, float],
) -> list[float]:
    jaccard, overlap, _ = F.overlap(F.content_words(earlier), F.content_words(later))
    ids_a, ids_b = F.identifiers(earlier), F.identifiers(later)
    ident_jaccard = F.overlap(ids_a, ids_b)[0]
    env_pair = float("env_missing" in F.cue_hits(earlier) and "env_missing" in F.cue_hits(later))
    return [
        cos, jaccard, overlap, ident_jaccard, float(np.log1p(len(ids_a & ids_b))), float(same_bee),
        min(earlier_probs["other"], later_probs["other"]), earlier_probs["blocker"] * later_probs["blocker"],
        env_pair, cos * float(same_bee),
    ]


@dataclass(frozen=True)
class Head:
    """A standardised linear model with a calibrated link: softmax with temperature, or Platt logistic."""

    mean: Array
    scale: Array
    weights: Array
    """(n_features, n_outputs); one output for a logistic head."""
    bias: Array
    calibration: Array
    """softmax: [temperature] or [temperature, offset per class] applied as softmax(z / t + offsets);
    logistic: [a, b] applied as sigmoid(a*z + b)."""

    def logits(self, x: Array) -> Array:
        return ((np.atleast_2d(x) - self.mean) / self.scale) @ self.weights + self.bias

    def predict(self, x: Array) -> Array:
        """Probabilities: (n, k) for softmax heads, (n,) for logistic heads."""
        return self.calibrated(self.logits(x))

    def calibrated(self, z: Array) -> Array:
        """Probabilities from raw logits ``z`` (n, outputs) through this head's calibration."""
        if z.shape[1] == 1:
            a, b = self.calibration
            yes: Array = 1.0 / (1.0 + np.exp(-(a * z[:, 0] + b)))
            return yes
        z = z / self.calibration[0]
        if len(self.calibration) > 1:  # per-class offsets fitted with the temperature (vector scaling)
            z = z + self.calibration[1:]
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        probs: Array = e / e.sum(axis=1, keepdims=True)
        return probs


@dataclass(frozen=True)
class Heads:
    kind: Head
    news: Head
    useful: Head
    related: Head
    info: dict[str, object]


def heads_path() -> Path:
    return Path(str(resources.files("hive.judge.local").joinpath("data").joinpath(HEADS_FILE)))


def save_heads(path: Path, heads: dict[str, Head], info: dict[str, object]) -> None:
    arrays: dict[str, Array] = {}
    for name, head in heads.items():
        for part in ("mean", "scale", "weights", "bias", "calibration"):
            arrays[f"{name}.{part}"] = np.asarray(getattr(head, part), dtype=np.float32)
    arrays["info"] = np.frombuffer(json.dumps(info, sort_keys=True).encode(), dtype=np.uint8)
    with path.open("wb") as handle:
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]


def load_heads(path: Path | None = None) -> Heads:
    path = path or heads_path()
    try:
        with np.load(path) as data:
            def head(name: str) -> Head:
                return Head(*(data[f"{name}.{part}"].astype(np.float64)
                              for part in ("mean", "scale", "weights", "bias", "calibration")))
            info = json.loads(bytes(data["info"]).decode())
            return Heads(head("kind"), head("news"), head("useful"), head("related"), info)
    except (OSError, KeyError, ValueError) as exc:
        raise LocalModelError(f"cannot read the local judge heads {path}: {exc}") from exc
