"""chunkeval: RAG chunking metrics as tests."""

__version__ = "0.1.0"
