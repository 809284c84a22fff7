"""Bad EPUB, PDF and HTML inputs: a one-line error, a non-zero exit, nothing enqueued or stored."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

from helpers.books import make_epub2, make_image_pdf, write_zip
from helpers.cli import invoke

CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)
ENCRYPTION = """<?xml version="1.0"?><encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
 xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>
 <enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
 <enc:CipherData><enc:CipherReference URI="OEBPS/a.html"/></enc:CipherData></enc:EncryptedData></encryption>"""


def _epub2_files(tmp_path) -> dict[str, bytes]:
    with zipfile.ZipFile(make_epub2(tmp_path / "base.epub")) as zf:
        return {n: zf.read(n) for n in zf.namelist() if n != "mimetype"}


def _lying_bomb(path):
    """An entry that inflates to 30 MiB while its headers say 100 bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("META-INF/container.xml", CONTAINER)
        zf.writestr("OEBPS/big.html", b"\0" * (30 << 20))
    data = bytearray(buf.getvalue())
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (at := data.find(sig, start)) >= 0:
            name_len = struct.unpack_from("<H", data, at + (26 if sig == b"PK\x03\x04" else 28))[0]
            name = bytes(data[at + (30 if sig == b"PK\x03\x04" else 46) :][:name_len])
            if name == b"OEBPS/big.html":
                struct.pack_into("<I", data, at + size_at, 100)
            start = at + 4
    path.write_bytes(bytes(data))
    return path


def bad_books(tmp_path) -> dict[str, tuple[object, str]]:
    base = _epub2_files(tmp_path)
    notzip = tmp_path / "notzip.epub"
    notzip.write_bytes(b"This is just text pretending to be an EPUB.")
    nocontainer = write_zip(tmp_path / "nocontainer.epub", {k: v for k, v in base.items() if "container" not in k})
    noopf = write_zip(tmp_path / "noopf.epub", {k: v for k, v in base.items() if not k.endswith(".opf")})
    drm = write_zip(tmp_path / "drm.epub", base | {"META-INF/encryption.xml": ENCRYPTION})
    adept = write_zip(tmp_path / "adept.epub", base | {"META-INF/rights.xml": "<rights/>"})
    empty_pages = {k: v for k, v in base.items()}
    for name in ("OEBPS/a.html", "OEBPS/b.html"):
        empty_pages[name] = b'<html><body><img src="pic.png" alt="x"/></body></html>'
    notext = write_zip(tmp_path / "notext.epub", empty_pages)
    bomb = write_zip(tmp_path / "bomb.epub", base | {"OEBPS/zeros.html": b"\0" * (21 << 20)})
    lying = _lying_bomb(tmp_path / "lying.epub")
    many = write_zip(tmp_path / "many.epub", base | {f"x/{i}.txt": b"" for i in range(10_001)})
    scanned = make_image_pdf(tmp_path / "scan.pdf")
    brokenpdf = tmp_path / "broken.pdf"
    brokenpdf.write_bytes(b"%PDF-1.7\n garbage without objects")
    html = tmp_path / "chrome.html"
    html.write_text("<html><head><script>alert(1)</script></head><body><nav>Menu</nav><img src=a.png></body></html>")
    return {
        "not a zip": (notzip, "is not a valid EPUB: it is not a zip archive"),
        "no container.xml": (nocontainer, "has no META-INF/container.xml"),
        "no OPF": (noopf, "is not a valid EPUB (the package document (.opf) that container.xml names is missing)"),
        "DRM (encryption.xml)": (drm, "is DRM-protected"),
        "DRM (rights.xml)": (adept, "is DRM-protected"),
        "no reading text": (notext, "has no text to narrate"),
        "zip bomb": (bomb, "inflates to more than 20 MiB"),
        "zip bomb, sizes lying": (lying, "is not a valid EPUB"),
        "too many entries": (many, "more than the 10000"),
        "scanned PDF": (scanned, "has no text layer (a scanned PDF?): run OCR first, e.g. ocrmypdf"),
        "broken PDF": (brokenpdf, "is not a readable PDF"),
        "HTML with nothing readable": (html, "has no text to narrate"),
    }


def test_each_bad_book_is_one_clear_line_and_enqueues_nothing(env, tmp_path, voice_wav, external_redis):
    out = Path(env["NARRATE_OUTPUT_DIR"])
    seen = []
    for name, (path, message) in bad_books(tmp_path).items():
        for args in (
            ["submit", str(path), "--voice", str(voice_wav), "-o", str(out / "x.m4b")],
            ["chapters", str(path)],
        ):
            proc = invoke(env, *args)
            err = proc.stderr.strip()
            assert proc.returncode != 0, (name, args[0])
            assert message in err, (name, err)
            assert len(err.splitlines()) == 1 and err.startswith("Error: "), (name, err)
            seen.append(f"{name}: {err}")
    assert external_redis.dbsize() == 0  # nothing enqueued, nothing stored
    assert not list(out.iterdir())  # no partial output
    print("\n".join(seen))
