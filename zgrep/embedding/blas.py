"""One BLAS thread for zg's matrix products: a query's matrices are a few rows tall and an index
run's pooling already runs in a process per core, so more threads only wait for each other (a cold
index of Django spent 14 of its 16 s of pooling CPU so); one thread also gives the same floats
whatever the core count."""

from __future__ import annotations

from functools import cache

from threadpoolctl import threadpool_limits


@cache
def one_thread() -> None:
    """Limit this process's BLAS to one thread (from the first call on)."""
    threadpool_limits(limits=1, user_api="blas")
