"""An EPUB's zip container checked before an EPUB library reads it: a zip at all, a bounded
number of entries, declared and actual uncompressed sizes within the document size limit (a zip
bomb is refused while it is being inflated, not after), container.xml present, and no DRM."""

from __future__ import annotations

import io
import zipfile
import zlib

from lxml import etree
from narrate.jobs.errors import BadInput

MAX_ENTRIES = 10_000
_CHUNK = 1 << 16
# Font obfuscation (IDPF, Adobe) is allowed by the EPUB standard and hides no reading text.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_DRM_FILES = ("META-INF/rights.xml", "META-INF/license.lcpl", "META-INF/sinf.xml")
_XML = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def check_epub_zip(raw: bytes, origin: str, max_bytes: int) -> None:
    """BadInput with a one-line reason if `raw` is not an EPUB narrate can safely read."""
    corrupt = f"{origin} is not a valid EPUB"
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise BadInput(f"{corrupt}: it is not a zip archive (a damaged download? export it again)") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ENTRIES:
            raise BadInput(f"{corrupt}: it has {len(infos)} files, more than the {MAX_ENTRIES} narrate reads")
        bomb = f"{origin} inflates to more than {max_bytes // 2**20} MiB, the document limit (a zip bomb?)"
        if sum(i.file_size for i in infos) > max_bytes:
            raise BadInput(bomb)
        total = 0
        try:
            for info in infos:
                with zf.open(info) as f:  # the sizes an entry declares may lie: count what comes out
                    while chunk := f.read(_CHUNK):
                        total += len(chunk)
                        if total > max_bytes:
                            raise BadInput(bomb)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as e:
            raise BadInput(f"{corrupt}: {info.filename!r} is damaged ({str(e).splitlines()[0]})") from None
        names = set(zf.namelist())
        if "META-INF/container.xml" not in names:
            raise BadInput(f"{corrupt}: it has no META-INF/container.xml (is it an EPUB?)")
        _refuse_drm(zf, names, origin)


def _refuse_drm(zf: zipfile.ZipFile, names: set[str], origin: str) -> None:
    encrypted = []
    if "META-INF/encryption.xml" in names:
        try:
            root = etree.fromstring(zf.read("META-INF/encryption.xml"), _XML)
        except etree.XMLSyntaxError:
            raise BadInput(f"{origin} is not a valid EPUB: its META-INF/encryption.xml is damaged") from None
        for data in root.iter("{*}EncryptedData"):
            method = data.find("{*}EncryptionMethod")
            algorithm = method.get("Algorithm", "") if method is not None else ""
            if algorithm not in _FONT_OBFUSCATION:
                ref = data.find(".//{*}CipherReference")
                encrypted.append(ref.get("URI", "?") if ref is not None else "?")
    if encrypted or any(n in names for n in _DRM_FILES):
        raise BadInput(
            f"{origin} is DRM-protected (its content is encrypted): narrate reads only DRM-free EPUBs; "
            "use a DRM-free copy of the book"
        )
