"""The documents the tests narrate: books of distinct sentences, folders of documents, and real
EPUB, HTML and PDF files built for the input-format tests (ebooklib, fpdf2)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

# A small valid JPEG-like payload is enough: the reader copies the bytes, it never decodes them.
COVER = b"\xff\xd8\xff\xe0" + b"narrate test cover" * 8 + b"\xff\xd9"

WORDS = "amber birch cedar delta ember fjord glade harbor inlet juniper kestrel lantern meadow".split()


def book(n: int, marker: str = "") -> str:
    """A book of n distinct sentences in paragraphs of five; `marker` is put into sentence 7."""
    sentences = []
    for i in range(n):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(3 + i % 5))
        prefix = f"{marker} " if marker and i == 7 else ""
        sentences.append(f"{prefix}Sentence number {i} speaks of {words}.")
    return "\n\n".join(" ".join(sentences[p : p + 5]) for p in range(0, n, 5))


def write_docs(folder: Path, docs: dict[str, int] | int, prefix: str = "doc", sentences: int = 2) -> list[Path]:
    """Documents in `folder` (made if missing). A dict: one document per entry (relative file name ->
    number of sentences), no two sharing a sentence (so none reuses another's checkpoints). A count:
    that many documents PREFIX0000.txt, PREFIX0001.txt, ... of `sentences` sentences each."""
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(docs, int):
        texts = {f"{prefix}{i:04d}.txt": book(sentences, f"{prefix} {i}") for i in range(docs)}
    else:
        texts = {
            name: book(n).replace("Sentence number", f"In {''.join(c for c in name if c.isalnum())} sentence")
            for name, n in docs.items()
        }
    paths = []
    for name, text in texts.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths.append(path)
    return paths


def epub_page(epub, name: str, title: str, body: str, uid: str, epub_type: str = ""):
    item = epub.EpubHtml(title=title, file_name=name, lang="en", uid=uid)
    kind = f' epub:type="{epub_type}"' if epub_type else ""
    item.content = f'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{title}</title></head><body{kind}>{body}</body></html>'  # noqa: E501
    return item


def make_epub3(path: Path) -> Path:
    """An EPUB 3: a cover image and page, a contents page, a copyright page, three chapters (the
    first with a footnote and an image), navigation document and NCX."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("narrate-test-book")
    book.set_title("The Lighthouse Keeper")
    book.set_language("en")
    book.add_author("Ada Lovelace")
    book.set_cover("images/cover.jpg", COVER)
    toc_page = epub_page(
        epub,
        "contents.xhtml",
        "Contents",
        '<h1>Contents</h1><ol><li><a href="ch1.xhtml">One</a></li><li><a href="ch2.xhtml">Two</a></li></ol>',
        "contents",
    )
    copyright_page = epub_page(
        epub,
        "legal.xhtml",
        "Legal",
        "<p>Copyright © 2026 Ada Lovelace. All rights reserved.</p><p>ISBN 978-0-00-000000-0</p>",
        "legal",
        "copyright-page",
    )
    ch1 = epub_page(
        epub,
        "ch1.xhtml",
        "Arrival",
        '<h1>Chapter One</h1><p>The keeper climbed the stairs.<sup><a epub:type="noteref" href="#n1">1</a></sup> '
        'The lamp was cold.</p><img src="images/cover.jpg" alt="A picture of the lamp"/>'
        '<aside epub:type="footnote" id="n1"><p>There were ninety-nine stairs.</p></aside>',
        "ch1",
    )
    ch2 = epub_page(
        epub, "ch2.xhtml", "Storm", "<h1>Chapter Two</h1><p>Rain hammered the glass. Ships waited.</p>", "ch2"
    )
    ch3 = epub_page(epub, "ch3.xhtml", "Dawn", "<h1>Chapter Three</h1><p>Morning came at last.</p>", "ch3")
    for item in (toc_page, copyright_page, ch1, ch2, ch3):
        book.add_item(item)
    book.toc = [
        epub.Link("ch1.xhtml", "Arrival", "ch1"),
        epub.Link("ch2.xhtml", "The Storm", "ch2"),
        epub.Link("ch3.xhtml", "Dawn", "ch3"),
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["cover", "nav", toc_page, copyright_page, ch1, ch2, ch3]
    epub.write_epub(str(path), book)
    return path


def make_epub2(path: Path) -> Path:
    """An EPUB 2: an OPF with an NCX only (no navigation document), written by hand with zipfile."""
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
  <dc:title>Old Tales</dc:title><dc:creator>Anon</dc:creator><dc:language>fr</dc:language>
  <dc:identifier id="id">old-tales</dc:identifier></metadata>
 <manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
  <item id="a" href="a.html" media-type="application/xhtml+xml"/>
  <item id="b" href="b.html" media-type="application/xhtml+xml"/></manifest>
 <spine toc="ncx"><itemref idref="a"/><itemref idref="b"/></spine>
</package>"""
    ncx = """<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><head/><docTitle><text>Old Tales</text></docTitle>
<navMap><navPoint id="p1" playOrder="1"><navLabel><text>The Fox</text></navLabel><content src="a.html"/></navPoint>
<navPoint id="p2" playOrder="2"><navLabel><text>The Crow</text></navLabel><content src="b.html"/></navPoint>
</navMap></ncx>"""
    page = '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body>{}</body></html>'
    files = {
        "META-INF/container.xml": '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/content.opf": opf,
        "OEBPS/toc.ncx": ncx,
        "OEBPS/a.html": page.format("<p>A fox was hungry. It saw grapes.</p>"),
        "OEBPS/b.html": page.format("<p>A crow had cheese.</p>"),
    }
    return write_zip(path, files)


def write_zip(path: Path, files: dict[str, str | bytes]) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        for name, data in files.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())
    return path


def _pdf_with_running_heads(header: str):
    """An fpdf2 document whose every page has `header` at the top and its number at the bottom (9 pt)."""
    from fpdf import FPDF

    class Book(FPDF):
        def header(self):
            self.set_font("Helvetica", size=9)
            self.cell(0, 8, header, align="C")
            self.ln(12)

        def footer(self):
            self.set_y(-15)
            self.set_font("Helvetica", size=9)
            self.cell(0, 8, str(self.page_no()), align="C")

    return Book()


def make_text_pdf(path: Path) -> Path:
    """Three pages of text with a running header ("The Lighthouse Keeper"), page numbers in the
    footer and a word hyphenated at a line end; a bookmark per chapter."""
    pdf = _pdf_with_running_heads("The Lighthouse Keeper")
    pdf.set_font("Helvetica", size=12)
    pages = [
        (
            "Chapter One",
            [
                "The keeper climbed the stairs every evening to light the great",
                "lamp. He counted each step of the climb and the narra-",
                "tion of his day went on in his head until he reached the top.",
                "Then he rested.",
            ],
        ),
        (
            "Chapter Two",
            [
                "A storm came in from the west and the sea rose higher than",
                "anyone in the village could remember.",
                "Ships waited.",
            ],
        ),
        ("Chapter Three", ["Morning came at last and the water was calm again under", "a pale sky.", "The end."]),
    ]
    for title, lines in pages:
        pdf.add_page()
        pdf.start_section(title)
        for line in lines:
            pdf.cell(0, 7, line)
            pdf.ln(7)
    pdf.output(str(path))
    return path


def make_image_pdf(path: Path) -> Path:
    """A scanned-like PDF: each page only an image, no text layer."""
    from fpdf import FPDF
    from PIL import Image

    img = Image.new("L", (200, 260), 255)
    for x in range(20, 180):
        for y in (40, 60, 80):
            img.putpixel((x, y), 0)
    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.image(img, x=10, y=10, w=190)
    pdf.output(str(path))
    return path


def make_headed_pdf(path: Path, bold_only: bool = False) -> Path:
    """A PDF without bookmarks whose headings are only set apart by their type: a 24 pt title, 18 pt
    chapter headings (one of them mid-page), 14 pt section headings inside chapters, 11 pt body,
    a 9 pt running header and page numbers. `bold_only`: chapter headings in bold at the body size,
    nothing larger."""
    pdf = _pdf_with_running_heads("Notes from the Coast")

    def text(size: int, line: str, style: str = "") -> None:
        pdf.set_font("Helvetica", style, size=size)
        pdf.cell(0, size * 0.6, line)
        pdf.ln(size * 0.6)

    def body(*lines: str) -> None:
        for line in lines:
            text(11, line)

    chapter = (lambda t: text(11, t, "B")) if bold_only else (lambda t: text(18, t, "B"))
    pdf.add_page()
    if not bold_only:
        text(24, "Winter by the Sea")
    body("These notes were kept over one long winter by the sea.")
    chapter("Chapter One")
    body("The keeper climbed the stairs every evening to light the lamp.")
    if not bold_only:
        text(14, "The Lamp")
    body("It burned all night and the ships saw it far out at sea.")
    chapter("Chapter Two")
    body("A storm came in from the west and the sea rose high.")
    pdf.add_page()
    body("The village waited for the morning.")
    if not bold_only:
        text(14, "The Storm")
    body("Boats were pulled up past the tide line.")
    pdf.add_page()
    chapter("Chapter Three")
    body("Morning came at last and the water was calm again.", "The end.")
    pdf.output(str(path))
    return path


def write_epub(path, title: str = "The Odyssey") -> None:
    """An EPUB 2 of two chapters with an author, publisher, date, description, ISBN, calibre series
    (Greek Classics, 2) and a cover (COVER)."""
    from ebooklib import epub

    b = epub.EpubBook()
    b.set_identifier("urn:uuid:0e8c1c1e-narrate-test")
    b.set_title(title)
    b.set_language("en")
    b.add_author("Homer")
    b.add_metadata("DC", "publisher", "Penguin")
    b.add_metadata("DC", "date", "2003-04-29")
    b.add_metadata("DC", "description", "<p>The <b>epic</b> of a long way home.</p>")
    b.add_metadata("DC", "identifier", "978-0-14-044913-6", {"{http://www.idpf.org/2007/opf}scheme": "ISBN"})
    b.add_metadata(None, "meta", "", {"name": "calibre:series", "content": "Greek Classics"})
    b.add_metadata(None, "meta", "", {"name": "calibre:series_index", "content": "2.0"})
    b.set_cover("cover.jpg", COVER)
    chapters = []
    for n, text in enumerate(["Sing to me of the man. He wandered far.", "The gods sat in council. They spoke."], 1):
        c = epub.EpubHtml(title=f"Book {n}", file_name=f"c{n}.xhtml", lang="en")
        c.content = f"<h1>Book {n}</h1><p>{text}</p>"
        b.add_item(c)
        chapters.append(c)
    b.toc = chapters
    b.spine = ["nav", *chapters]
    b.add_item(epub.EpubNcx())
    b.add_item(epub.EpubNav())
    epub.write_epub(str(path), b)
