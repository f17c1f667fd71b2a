"""The language registry: one `Language` record per language (`builtin`), read through `registry`."""
