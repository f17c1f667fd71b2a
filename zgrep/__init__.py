"""zgrep: semantic + lexical code search over a workspace, backed by Milvus."""

__version__ = "0.1.0"
