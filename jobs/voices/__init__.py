"""Voices by name: the voice library shared by every host through Redis (saved and designed voices,
their samples kept by content hash), what a model offers (Base clones samples, CustomVoice has
preset speakers, VoiceDesign makes a voice from a description, read from its config.json where this
host has it), and turning a ``--voice`` argument (a file, a saved name or a preset speaker) into the
voice a job speaks in (``choice.choose``)."""
