"""The source EPUB's files as a read-along book keeps them: what its package document lists and
nothing else, under normalized names inside the container, with nothing that runs or loads from
elsewhere.

A source EPUB is anyone's file, and the read-along book is opened by reading systems and browsers
that run scripts. Kept: the manifest's items whose names stay inside the container and exist
(not the zip's other members, not remote items); a fresh container.xml; META-INF/encryption.xml
only where every file it names is kept (obfuscated fonts). In XHTML and SVG: scripts, frames,
objects, `base`, `meta http-equiv` (a refresh) and event handler attributes go; links and
sources with `javascript:`, `vbscript:` or a name outside the book go, as does anything loaded
from elsewhere (remote images, stylesheets, media); links out to the web stay. Entities of an
internal DTD are written out as their text (an external or undeclared one goes), duplicate ids
get a suffix, and characters XML 1.0 refuses go. CSS loses remote `@import`s and `url()`s and
scripting extensions (epub_css). A page that is not well-formed XML is read as HTML and written as XHTML."""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from urllib.parse import unquote, urlsplit

from lxml import etree
from narrate.jobs.documents.readers.epub_css import clean_css, scripts
from narrate.jobs.documents.readers.xhtml import parse_html
from narrate.jobs.xmltext import named_entity

XHTML = "http://www.w3.org/1999/xhtml"
OPF = "http://www.idpf.org/2007/opf"
CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
DOCTYPE = "<!DOCTYPE html>"

_XML = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
_PAGE_TYPES = {"application/xhtml+xml", "image/svg+xml"}
_NCX = "application/x-dtbncx+xml"
_FEATURES = {"http://www.w3.org/2000/svg": "svg", "http://www.w3.org/1998/Math/MathML": "mathml"}
_GONE = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "portal"}
_LOADING = {"src", "poster", "data", "background", "srcset", "lowsrc", "dynsrc", "formaction", "action"}
_LINKING = {"href", "cite", "longdesc"}
_BAD_SCHEMES = {"javascript", "vbscript", "file", "about", "blob"}
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CHAR_REF = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")
_NAMED = re.compile(r"&([A-Za-z_][\w.-]*);")
_DECLARED = re.compile(r"<!ENTITY\s+([A-Za-z_][\w.-]*)\s")


@dataclass
class Source:
    files: dict[str, bytes]  # name in the container -> its bytes (the package document included)
    opf_path: str
    dropped: list[str] = field(default_factory=list)  # what was left out or changed, for the log


def clean_source(raw: bytes) -> Source:
    """The files of the source EPUB `raw` that the read-along book keeps, cleaned; ValueError when
    it names no package document inside the container."""
    with zipfile.ZipFile(BytesIO(raw)) as z:
        members = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    found = etree.fromstring(_xml_bytes(members.get("META-INF/container.xml", b"")), _XML).find(
        f".//{{{CONTAINER}}}rootfile"
    )
    opf_path = _inside(str(found.get("full-path") or "") if found is not None else "")
    if opf_path is None:
        raise ValueError("META-INF/container.xml names no package document inside the book")
    if opf_path not in members:
        raise ValueError("the package document (.opf) that container.xml names is missing")
    base = posixpath.dirname(opf_path)
    opf = etree.fromstring(_xml_bytes(members[opf_path]), _XML)
    manifest = opf.find(f"{{{OPF}}}manifest")
    out = Source({"META-INF/container.xml": container(opf_path)}, opf_path)
    kept: dict[str, str] = {}  # path -> media type
    items: dict[str, etree._Element] = {}
    gone_ids: set[str] = set()
    for item in list(manifest if manifest is not None else []):
        if not isinstance(item.tag, str):
            continue
        href = item.get("href") or ""
        path = None if _scheme(href) or href.startswith("//") else _inside(posixpath.join(base, unquote(href)))
        if path is None or path not in members or path in kept or path == opf_path:
            out.dropped.append(f"manifest item {href!r}")
            gone_ids.add(item.get("id") or "")
            manifest.remove(item)
            continue
        kept[path], items[path] = item.get("media-type") or "", item
        tokens = (item.get("properties") or "").split()
        if {"scripted", "remote-resources"} & set(tokens):
            item.set("properties", " ".join(t for t in tokens if t not in ("scripted", "remote-resources")))
            if not item.get("properties"):
                del item.attrib["properties"]
    for path, media_type in list(kept.items()):
        data: bytes | None = members[path]
        if media_type in _PAGE_TYPES:
            features: set[str] = set()
            data = clean_page(members[path], path, set(kept), out.dropped, media_type == "image/svg+xml", features)
            if media_type == "application/xhtml+xml":
                _declare(items[path], features)  # EPUB 3 asks a page with SVG or MathML in it to say so
        elif media_type == _NCX:
            data = _clean_ncx(members[path], path, set(kept), out.dropped)
        elif media_type == "text/css":
            css = members[path].decode("utf-8", errors="replace")
            data = clean_css(css, path, _loader(path, set(kept)), out.dropped).encode()
        if data is None:  # not readable: left out
            item = items[path]
            gone_ids.add(item.get("id") or "")
            manifest.remove(item)
            continue
        out.files[path] = data
    _forget(opf, gone_ids)
    encryption = members.get("META-INF/encryption.xml")
    if encryption is not None and _names_only(encryption, set(kept)):
        out.files["META-INF/encryption.xml"] = encryption
    out.files[opf_path] = etree.tostring(opf, xml_declaration=True, encoding="utf-8")
    return out


def container(opf_path: str) -> bytes:
    """META-INF/container.xml naming the package document at `opf_path`."""
    root = etree.Element(f"{{{CONTAINER}}}container", nsmap={None: CONTAINER})
    root.set("version", "1.0")
    rootfile = etree.SubElement(etree.SubElement(root, f"{{{CONTAINER}}}rootfiles"), f"{{{CONTAINER}}}rootfile")
    rootfile.set("full-path", opf_path)
    rootfile.set("media-type", "application/oebps-package+xml")
    out: bytes = etree.tostring(root, xml_declaration=True, encoding="utf-8")
    return out


def clean_epub(raw: bytes) -> bytes:
    """The EPUB `raw` as a zip of `clean_source`'s files (the mimetype first and stored)."""
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), b"application/epub+zip")
        for name, data in clean_source(raw).files.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _inside(path: str) -> str | None:
    """`path` normalized, or None where it leaves the container (or names the container's root)."""
    path = posixpath.normpath(path.split("#")[0].replace("\\", "/"))
    if path in (".", "") or path.startswith(("../", "/")) or path == "..":
        return None
    return path


def _scheme(url: str) -> str:
    try:
        return urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return "invalid"


def _forget(opf: etree._Element, ids: set[str]) -> None:
    """Every reference the package document makes to the manifest items `ids`, taken out."""
    for el in list(opf.iter()):
        if not isinstance(el.tag, str):
            continue
        if el.get("idref") in ids and el.getparent() is not None:
            el.getparent().remove(el)
        for name in ("fallback", "media-overlay", "toc"):
            if el.get(name) in ids:
                del el.attrib[name]
    guide = opf.find(f"{{{OPF}}}guide")
    if guide is not None and not len(guide):
        opf.remove(guide)


def _declare(item: etree._Element, found: set[str]) -> None:
    tokens = (item.get("properties") or "").split()
    tokens += sorted(found - set(tokens))
    if tokens:
        item.set("properties", " ".join(tokens))


def _names_only(encryption: bytes, kept: set[str]) -> bool:
    try:
        root = etree.fromstring(encryption, _XML)
    except etree.XMLSyntaxError:
        return False
    uris = [ref.get("URI") or "" for ref in root.iter("{*}CipherReference")]
    return all(_inside(unquote(u)) in kept for u in uris)


def _xml_bytes(raw: bytes) -> bytes:
    """XML as bytes lxml takes: what XML 1.0 refuses taken out, HTML's named entities as characters,
    character references to refused characters and undeclared entities dropped."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = raw.decode("utf-16", errors="replace")
    else:
        text = raw.decode("utf-8-sig", errors="replace")
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", _NOT_XML.sub("", text))
    declared = set(_DECLARED.findall(text))

    def named(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in declared or name in ("amp", "lt", "gt", "quot", "apos"):
            return m.group(0)
        converted = named_entity(m)
        return "" if converted == m.group(0) else converted

    def numeric(m: re.Match[str]) -> str:
        ref = m.group(1)
        code = int(ref[1:], 16) if ref[0] in "xX" else int(ref)
        return m.group(0) if code < 0x110000 and not _NOT_XML.match(chr(code)) else ""

    return _CHAR_REF.sub(numeric, _NAMED.sub(named, text)).encode()


def _parse(raw: bytes) -> etree._ElementTree:
    """The tree of an XML page with an internal DTD's entities written out as text (an external one goes)."""
    tree = etree.ElementTree(etree.fromstring(_xml_bytes(raw), _XML))
    dtd = tree.docinfo.internalDTD
    texts = {e.name: (e.content or "") for e in dtd.iterentities()} if dtd is not None else {}
    for ref in list(tree.iter(etree.Entity)):
        _replace_with_text(ref, texts.get(ref.name, "") if ref.name else "")
    return tree


def _replace_with_text(el: etree._Element, text: str) -> None:
    parent, before = el.getparent(), el.getprevious()
    if parent is None:
        return
    text += el.tail or ""
    if before is not None:
        before.tail = (before.tail or "") + text
    else:
        parent.text = (parent.text or "") + text
    parent.remove(el)


def _as_xhtml(raw: bytes, path: str) -> etree._ElementTree:
    """A page that is not well-formed, read as HTML (BadInput where it nests too deep to be read
    whole) and given the XHTML namespace."""
    doc = parse_html(_NOT_XML.sub("", raw.decode("utf-8", errors="replace")), path)
    root = etree.Element(f"{{{XHTML}}}html", nsmap={None: XHTML})
    for el in doc.iter():
        if isinstance(el.tag, str) and not el.tag.startswith("{"):
            el.tag = f"{{{XHTML}}}{el.tag}"
    for child in doc:
        root.append(child)
    return etree.ElementTree(root)


def clean_page(
    raw: bytes, path: str, kept: set[str], dropped: list[str], svg: bool = False, found: set[str] | None = None
) -> bytes:
    """An XHTML page (or SVG image) of the book with nothing that runs or loads from elsewhere;
    `found` gets "svg" and "mathml" where the page holds them."""
    try:
        tree = _parse(raw)
    except etree.XMLSyntaxError:
        if svg:
            dropped.append(f"{path}: not well-formed SVG, left empty")
            return b'<svg xmlns="http://www.w3.org/2000/svg"/>'
        dropped.append(f"{path}: not well-formed XML, read as HTML")
        tree = _as_xhtml(raw, path)
    is_nav = False
    seen: set[str] = set()
    for el in list(tree.getroot().iter()):
        if not isinstance(el.tag, str):
            if isinstance(el, etree._ProcessingInstruction) and el.getparent() is not None:
                _replace_with_text(el, "")
            continue
        qname = etree.QName(el)
        local = qname.localname.lower()
        if found is not None and qname.namespace in _FEATURES:
            found.add(_FEATURES[qname.namespace])
        if local in _GONE or (local == "meta" and el.get("http-equiv")) or _animates_a_link(el, local):
            dropped.append(f"{path}: <{local}>")
            _replace_with_text(el, "")
            continue
        if local == "nav":
            is_nav = True
        _clean_attributes(el, local, path, kept, dropped)
        if local in ("img", "image", "source", "track", "link", "audio", "video") and not _has_source(el, local):
            _replace_with_text(el, "")
            continue
        ident = el.get("id")
        if ident is not None:
            if ident in seen:
                n = 2
                while f"{ident}-{n}" in seen:
                    n += 1
                el.set("id", f"{ident}-{n}")
            seen.add(el.get("id") or "")
        if local == "style" and el.text:
            el.text = clean_css(el.text, path, _loader(path, kept), dropped)
    if is_nav:
        _nav_entries_with_targets(tree)
    doctype = None if svg else DOCTYPE
    out: bytes = etree.tostring(tree, xml_declaration=True, encoding="utf-8", doctype=doctype)
    return out


def _animates_a_link(el: etree._Element, local: str) -> bool:
    """SVG's `set` and `animate` can write `javascript:` into a link or a handler."""
    name = (el.get("attributeName") or "").lower()
    return local in ("set", "animate") and (name.endswith("href") or name.startswith("on"))


def _clean_attributes(el: etree._Element, local: str, path: str, kept: set[str], dropped: list[str]) -> None:
    for name in list(el.attrib):
        attr = etree.QName(name).localname.lower()
        value = el.attrib[name]
        if attr.startswith("on"):
            why = "an event handler"
        elif attr in _LOADING or (attr == "href" and local != "a"):
            why = _loading_problem(value, path, kept, local)
        elif attr in _LINKING:
            why = _link_problem(value, path, kept)
        elif attr == "style" and (scripts(value) or "url(" in value.lower()):
            clean = clean_css(value, path, _loader(path, kept), [])
            why = "" if clean == value else "a style that loads from elsewhere"
        else:
            why = ""
        if why:
            dropped.append(f"{path}: {local} {attr}={value[:60]!r} ({why})")
            del el.attrib[name]


def _loading_problem(value: str, path: str, kept: set[str], local: str) -> str:
    scheme = _scheme(value)
    if scheme == "data" and local in ("img", "image", "source") and value[5:].lower().startswith("image/"):
        return ""
    if scheme or value.strip().startswith("//"):
        return "loaded from elsewhere"
    return _local_problem(value, path, kept)


def _link_problem(value: str, path: str, kept: set[str]) -> str:
    scheme = _scheme(value)
    if scheme in _BAD_SCHEMES or scheme == "data" or scheme == "invalid":
        return f"a {scheme}: link"
    if scheme or value.strip().startswith("//"):
        return ""  # a link out to the web: the reading system opens it elsewhere
    return _local_problem(value, path, kept)


def _local_problem(value: str, path: str, kept: set[str]) -> str:
    target = value.strip().split("#")[0]
    if not target:
        return ""  # this page
    resolved = _inside(posixpath.join(posixpath.dirname(path), unquote(target)))
    return "" if resolved in kept else "outside the book"


def _loader(path: str, kept: set[str]) -> Callable[[str, str], str]:
    """What is wrong with loading a URL (by an element `local`) from the file at `path` ("": nothing)."""
    return lambda url, local: _loading_problem(url, path, kept, local)


def _has_source(el: etree._Element, local: str) -> bool:
    names = {"link": ("href",), "audio": ("src",), "video": ("src",)}.get(local, ("src", "href", "srcset"))
    if local in ("audio", "video") and len(el):
        return True  # their <source> children say
    return any(etree.QName(k).localname in names for k in el.attrib)


def _nav_entries_with_targets(tree: etree._ElementTree) -> None:
    """In a navigation document, an entry whose link went (it left the book) goes with it."""
    for a in list(tree.getroot().iter(f"{{{XHTML}}}a")):
        li = a.getparent()
        if (
            a.get("href") is None
            and li is not None
            and etree.QName(li).localname == "li"
            and li.getparent() is not None
        ):
            listing = li.getparent()
            if len(listing) > 1:
                listing.remove(li)


def _clean_ncx(raw: bytes, path: str, kept: set[str], dropped: list[str]) -> bytes | None:
    """An EPUB 2 table of contents without entries that point outside the book (None: not readable)."""
    try:
        tree = _parse(raw)
    except etree.XMLSyntaxError:
        dropped.append(f"{path}: not well-formed, left out")
        return None
    for content in list(tree.getroot().iter("{*}content")):
        if _link_problem(content.get("src") or "", path, kept) or _scheme(content.get("src") or ""):
            point = content.getparent()
            if point is not None and point.getparent() is not None:
                dropped.append(f"{path}: entry to {content.get('src')!r}")
                point.getparent().remove(point)
    out: bytes = etree.tostring(tree, xml_declaration=True, encoding="utf-8")
    return out
