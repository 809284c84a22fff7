"""What narrate keeps in Redis besides RQ's own keys: documents, voices and voice embeddings,
all content-addressed so any worker host can read them and resubmits share them."""

from __future__ import annotations

import hashlib
import json
import zlib

import redis

from .documents import Document

PREFIX = "narrate:"


def document_key(doc_id: str) -> str:
    return f"{PREFIX}doc:{doc_id}"


def voice_key(voice_sha: str) -> str:
    return f"{PREFIX}voice:{voice_sha}"


def embedding_key(voice_sha: str, model_key: str) -> str:
    return f"{PREFIX}emb:{model_key}:{voice_sha}"


def put_document(r: redis.Redis, doc: Document) -> str:
    blob = json.dumps(doc.to_json(), ensure_ascii=False, sort_keys=True).encode()
    doc_id = hashlib.sha256(blob).hexdigest()
    r.set(document_key(doc_id), zlib.compress(blob), nx=True)
    return doc_id


def get_document(r: redis.Redis, doc_id: str) -> Document:
    blob = r.get(document_key(doc_id))
    if blob is None:
        raise LookupError(f"document {doc_id} is not in the store")
    return Document.from_json(json.loads(zlib.decompress(blob)))


def put_voice(r: redis.Redis, sha: str, wav: bytes) -> None:
    r.set(voice_key(sha), wav, nx=True)


def get_voice(r: redis.Redis, sha: str) -> bytes:
    wav = r.get(voice_key(sha))
    if wav is None:
        raise LookupError(f"voice {sha} is not in the store")
    if hashlib.sha256(wav).hexdigest() != sha:
        raise LookupError(f"voice {sha} in the store does not match its hash")
    return wav
