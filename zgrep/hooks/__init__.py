"""Git hooks that keep the index fresh: install/uninstall/status, the hook entry, the pending queue,
the worker."""
