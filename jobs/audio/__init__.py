"""Audio out: voice samples, book metadata, subtitles, stitching (streamed WAV, segments and their
encoders, gapless AAC joins), loudness, tags, chapter files and parts."""
