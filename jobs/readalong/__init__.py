"""Read-along books (`--readalong epub,manifest`, docs/readalong.md): the book's text and its audio
tied sentence by sentence. `marking.py` finds each sentence of the plan in (X)HTML pages and wraps
it in an id'd span (words too, given word timings) without changing what a reader sees; `pages.py`
gives the pages: an EPUB's own, as read, or XHTML made from the document; `smil.py` writes the
media overlays; `epub.py` the EPUB 3 package (the audio inside); `manifest.py` the audiobook
manifest (Readium Web Publication Manifest, audiobook profile); `words.py` word-level WebVTT;
`writer.py` is what the job's stitcher calls."""
