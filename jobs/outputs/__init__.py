"""Where outputs may go: paths under the output root, writes confined through directory descriptors,
ownership of output paths (one pending job per path), private scratch space."""
