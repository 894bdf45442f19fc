"""chunkeval's version: every cache key holds it, so it lives below everything that keys."""

__version__ = "0.1.0"
