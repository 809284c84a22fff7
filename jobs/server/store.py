"""What narrate keeps in Redis besides RQ's own keys: documents, voices and voice embeddings,
all content-addressed so any worker host can read them and resubmits share them.

Documents and voices expire: each submit and each job attempt keeps them for the job's result
lifetime (NARRATE_KEEP_DAYS) plus its timeout, so they outlive every job that references them
and then go."""

from __future__ import annotations

import hashlib
import json
import zlib

import redis
from narrate.jobs.documents.documents import Document

PREFIX = "narrate:"


def text(value: bytes | str) -> str:
    """A Redis reply as text (narrate's clients return bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def document_key(doc_id: str) -> str:
    return f"{PREFIX}doc:{doc_id}"


def voice_key(voice_sha: str) -> str:
    return f"{PREFIX}voice:{voice_sha}"


def embedding_key(voice_sha: str, model_key: str) -> str:
    return f"{PREFIX}emb:{model_key}:{voice_sha}"


def _put(r: redis.Redis, key: str, value: bytes, keep_s: int) -> None:
    """Store once; extend (never shorten) how long it is kept."""
    with r.pipeline() as p:
        p.set(key, value, nx=True, ex=keep_s)
        p.expire(key, keep_s, gt=True)
        p.execute()


def keep(r: redis.Redis, doc_id: str, voice_shas: list[str], keep_s: int) -> None:
    """A job that uses these is running or just ended: keep them at least `keep_s` more seconds
    (`voice_shas`: its voices' samples; a preset speaker has none)."""
    with r.pipeline() as p:
        p.expire(document_key(doc_id), keep_s, gt=True)
        for sha in voice_shas:
            p.expire(voice_key(sha), keep_s, gt=True)
        p.execute()


def _document_blob(doc: Document) -> bytes:
    return json.dumps(doc.to_json(), ensure_ascii=False, sort_keys=True).encode()


def document_id(doc: Document) -> str:
    """The id a document is stored under (its content hash), known before it is stored."""
    return hashlib.sha256(_document_blob(doc)).hexdigest()


def put_document(r: redis.Redis, doc: Document, keep_s: int) -> str:
    blob = _document_blob(doc)
    doc_id = hashlib.sha256(blob).hexdigest()
    _put(r, document_key(doc_id), zlib.compress(blob), keep_s)
    return doc_id


def get_document(r: redis.Redis, doc_id: str) -> Document:
    blob = r.get(document_key(doc_id))
    if blob is None:
        raise LookupError(f"document {doc_id} is no longer stored (it expired or was removed); submit it again")
    assert isinstance(blob, bytes)  # narrate's clients return bytes (decode_responses off)
    return Document.from_json(json.loads(zlib.decompress(blob)))


def put_voice(r: redis.Redis, sha: str, wav: bytes, keep_s: int) -> None:
    _put(r, voice_key(sha), wav, keep_s)


def get_voice(r: redis.Redis, sha: str) -> bytes:
    wav = r.get(voice_key(sha))
    if wav is None:
        raise LookupError(f"voice {sha} is not in the store")
    assert isinstance(wav, bytes)  # narrate's clients return bytes (decode_responses off)
    if hashlib.sha256(wav).hexdigest() != sha:
        raise LookupError(f"voice {sha} in the store does not match its hash")
    return wav


def cover_key(sha: str) -> str:
    return f"{PREFIX}cover:{sha}"


def put_cover(r: redis.Redis, image: bytes, keep_s: int) -> str:
    """A cover image (`--cover`), content-addressed like a voice."""
    sha = hashlib.sha256(image).hexdigest()
    _put(r, cover_key(sha), image, keep_s)
    return sha


def get_cover(r: redis.Redis, sha: str) -> bytes:
    image = r.get(cover_key(sha))
    assert image is None or isinstance(image, bytes)  # narrate's clients return bytes (decode_responses off)
    if image is None or hashlib.sha256(image).hexdigest() != sha:
        raise LookupError(f"cover {sha} is no longer stored (it expired or was removed); submit the job again")
    return image
