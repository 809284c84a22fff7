"""A finished book put where listeners' apps find it: a library folder in Audiobookshelf's layout
(or Plex's, or flat) with the audio, cover, description, reader, an OPF and Audiobookshelf's
metadata.json, written beside the library and renamed into place whole (`narrate export`)."""
