"""`zg adr check --staged --suggest` on 10 staged changes in a repository with 30 ADRs (adr-tools, MADR
and zg records): which ADRs it names for each change, and its wall time with and without the daemon.

Usage: python bench/adr_suggest.py [--runs 3] [--json]
The `expected` column is the decision a reviewer would want named (none for the last three changes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import Stopwatch, private_env

ZG = str(Path(sys.executable).with_name("zg"))

ADRS = [  # (title, status, context, decision)
    (
        "Retry idempotent HTTP requests with exponential backoff",
        "accepted",
        "Upstream services drop connections a few times a day.",
        "Outbound GET and HEAD requests are retried up to four times with exponential backoff and random jitter; "
        "POST requests are never retried.",
    ),
    (
        "Every outbound HTTP call sets a timeout",
        "accepted",
        "A slow upstream once held every worker for minutes.",
        "All calls through the HTTP client pass connect and read timeouts; no request waits forever.",
    ),
    (
        "Session cookies are HttpOnly, Secure and SameSite",
        "accepted",
        "Session theft through scripts and cross-site posts.",
        "The session cookie is HttpOnly, Secure and SameSite=Lax, and expires after 12 hours of inactivity.",
    ),
    (
        "Log structured JSON through the logging module",
        "accepted",
        "Free-text logs cannot be searched or alerted on.",
        "Code logs through the standard logging module with the JSON formatter; print statements are not allowed "
        "outside scripts.",
    ),
    (
        "Parameterised SQL queries only",
        "accepted",
        "SQL injection is the most common web vulnerability.",
        "Queries pass values as parameters to the database driver; SQL is never built by string concatenation "
        "or f-strings.",
    ),
    (
        "Use PostgreSQL for persistence",
        "accepted",
        "Orders and stock need transactions.",
        "Orders, customers and stock live in one PostgreSQL database.",
    ),
    (
        "Cache product prices in process with a TTL",
        "accepted",
        "Price lookups were 40% of database load.",
        "Prices are cached per worker in an LRU cache whose entries expire after five minutes.",
    ),
    (
        "Secrets come from environment variables only",
        "accepted",
        "A key was once committed to the repository.",
        "API keys, passwords and tokens are read from environment variables at start-up; they are never written "
        "in code or config files.",
    ),
    (
        "Money as integer cents",
        "accepted",
        "Float rounding lost cents in invoices.",
        "Amounts are stored and computed as integer cents with a currency code; floats never hold money, "
        "fees and taxes are rounded once.",
    ),
    (
        "Timestamps in UTC",
        "accepted",
        "Reports disagreed across time zones.",
        "Timestamps are stored and compared in UTC with timezone-aware datetimes; local time only at display.",
    ),
    (
        "Cursor pagination for list endpoints",
        "accepted",
        "Offset pages skip rows while data changes.",
        "List endpoints page with an opaque cursor, not offsets.",
    ),
    (
        "API versioning in the URL path",
        "accepted",
        "Clients broke on silent changes.",
        "Public endpoints live under /v1/; a breaking change gets a new version prefix.",
    ),
    (
        "Background jobs through a Redis queue",
        "accepted",
        "Exports blocked web requests.",
        "Slow work such as emails and exports runs in background workers fed from a Redis queue.",
    ),
    (
        "Send email through the provider's HTTP API",
        "accepted",
        "SMTP from web workers timed out.",
        "Transactional email goes through the provider API, never SMTP.",
    ),
    (
        "Rate limit the public API per key",
        "accepted",
        "One partner flooded the API.",
        "Each API key gets 100 requests per minute from a token bucket; over the limit answers 429.",
    ),
    (
        "Idempotency keys for payment requests",
        "accepted",
        "Double clicks charged customers twice.",
        "Payment creation requires an Idempotency-Key header; a repeated key returns the first result.",
    ),
    (
        "Hash passwords with argon2",
        "accepted",
        "Old hashes were unsalted SHA-1.",
        "Passwords are hashed with argon2id and never stored or logged in clear.",
    ),
    (
        "CSRF tokens on every form",
        "accepted",
        "Cross-site form posts changed user settings.",
        "State-changing form posts carry a CSRF token that middleware checks.",
    ),
    (
        "Database migrations with Alembic",
        "accepted",
        "Hand-run schema changes drifted between environments.",
        "Schema changes are Alembic migrations reviewed with the code.",
    ),
    (
        "UUIDv7 identifiers for public ids",
        "accepted",
        "Sequential ids leaked order volumes.",
        "Public resource ids are UUIDv7; integer keys stay internal.",
    ),
    (
        "Health check endpoint",
        "accepted",
        "The load balancer could not tell a dead worker.",
        "/healthz answers 200 when the database and the queue are reachable.",
    ),
    (
        "Metrics with Prometheus",
        "accepted",
        "Latency regressions went unnoticed.",
        "Services expose request counts and latencies at /metrics for Prometheus.",
    ),
    (
        "Feature flags in configuration",
        "accepted",
        "Half-finished features reached users.",
        "Unfinished features hide behind flags read from configuration.",
    ),
    (
        "Upload size limit of 10 MB",
        "accepted",
        "Huge uploads exhausted memory.",
        "Uploads larger than 10 MB are refused with 413 before the body is read.",
    ),
    (
        "Soft-delete customers",
        "proposed",
        "Support restores accounts deleted by mistake.",
        "Customers are marked deleted, never removed, for 30 days.",
    ),
    (
        "Format code with Black and lint with Ruff",
        "accepted",
        "Style debates slowed reviews.",
        "CI runs black --check and ruff on every pull request.",
    ),
    (
        "Pin dependencies with a lock file",
        "accepted",
        "A transitive upgrade broke production.",
        "Dependencies are pinned in a lock file that a bot updates weekly.",
    ),
    (
        "Internationalise texts with gettext",
        "accepted",
        "The shop opens in Germany.",
        "User-facing strings go through gettext; no hard-coded English in templates.",
    ),
    (
        "Images served from the CDN",
        "deprecated",
        "Image traffic dominated our bandwidth bill.",
        "Product images are served from the CDN with long cache headers.",
    ),
    (
        "Use pytest for tests",
        "accepted",
        "Two test styles coexisted.",
        "Tests use pytest with fixtures.",
    ),
]

CODE = {
    "src/http/client.py": '''"""Outbound HTTP."""

import time

import requests


def fetch_with_retry(url, attempts=4, base_delay=0.25):
    """GET a URL, retrying connection errors."""
    for attempt in range(attempts):
        try:
            return requests.get(url, timeout=(3, 10))
        except requests.ConnectionError:
            time.sleep(base_delay * 2 ** attempt)
    raise RuntimeError(url)
''',
    "src/web/sessions.py": '''"""Session handling."""


def set_session_cookie(response, session_id):
    response.set_cookie("sid", session_id, httponly=True, secure=True, samesite="Lax", max_age=12 * 3600)
    return response
''',
    "src/jobs/worker.py": '''"""Background export worker."""

import logging

log = logging.getLogger(__name__)


def process_export(job):
    rows = job.load_rows()
    job.write_csv(rows)
    log.info("export finished", extra={"job": job.id})
''',
    "src/db/orders.py": '''"""Order queries."""


def find_orders(conn, customer_id):
    return conn.execute("SELECT id, total_cents FROM orders WHERE customer_id = %s", (customer_id,)).fetchall()
''',
    "src/catalog/prices.py": '''"""Product prices."""


def price_of(conn, sku):
    row = conn.execute("SELECT price_cents FROM prices WHERE sku = %s", (sku,)).fetchone()
    return row[0]
''',
    "src/config.py": '''"""Settings."""

import os


def load_settings():
    return {"database_url": os.environ["DATABASE_URL"], "debug": os.environ.get("DEBUG") == "1"}
''',
    "src/payments/charge.py": '''"""Charges."""


def create_charge(gateway, amount_cents, currency, idempotency_key):
    return gateway.charge(amount=amount_cents, currency=currency, idempotency_key=idempotency_key)
''',
    "src/util/numbers.py": '''"""Small number helpers."""


def round_half_up(value):
    return int(value + 0.5)
''',
    "README.md": "# Shop backend\n\nThe backend of the shop: catalog, orders and payments.\n\nRun it with `make run`.\n",
    "static/site.css": "body {\n  color: #222;\n  font-family: sans-serif;\n}\n",
}

CHANGES = [  # (name, path, old, new, ADRs a reviewer would want named)
    (
        "retry jitter",
        "src/http/client.py",
        "            time.sleep(base_delay * 2 ** attempt)\n",
        "            jitter = random.uniform(0, base_delay)\n            time.sleep(base_delay * 2 ** attempt + jitter)\n",
        ["ADR-0001"],
    ),
    (
        "30-day session cookie",
        "src/web/sessions.py",
        'samesite="Lax", max_age=12 * 3600',
        'samesite="None", max_age=30 * 24 * 3600',
        ["ADR-0003"],
    ),
    (
        "print in the export worker",
        "src/jobs/worker.py",
        "    job.write_csv(rows)\n",
        '    job.write_csv(rows)\n    print(f"export {job.id} wrote {len(rows)} rows")\n',
        ["ADR-0004"],
    ),
    (
        "f-string SQL search",
        "src/db/orders.py",
        ".fetchall()\n",
        ".fetchall()\n\n\ndef search_orders(conn, text):\n"
        "    return conn.execute(f\"SELECT id FROM orders WHERE note LIKE '%{text}%'\").fetchall()\n",
        ["ADR-0005"],
    ),
    (
        "price dict cache with expiry",
        "src/catalog/prices.py",
        '"""Product prices."""\n',
        '"""Product prices."""\n\nimport time\n\n_cache = {}\nCACHE_SECONDS = 300\n\n\ndef cached_price(conn, sku):\n'
        "    hit = _cache.get(sku)\n    if hit and time.time() - hit[1] < CACHE_SECONDS:\n        return hit[0]\n"
        "    price = price_of(conn, sku)\n    _cache[sku] = (price, time.time())\n    return price\n",
        ["ADR-0007"],
    ),
    (
        "hard-coded API key",
        "src/config.py",
        '    return {"database_url"',
        '    api_key = "sk_live_51HxQ"  # payment gateway secret key\n    return {"api_key": api_key, "database_url"',
        ["ADR-0008"],
    ),
    (
        "float fee",
        "src/payments/charge.py",
        "    return gateway.charge(",
        "    fee = amount_cents / 100 * 0.029 + 0.30  # gateway fee in dollars\n    return gateway.charge(",
        ["ADR-0009"],
    ),
    ("README typo", "README.md", "the shop: catalog", "the shop's catalog", []),
    (
        "clamp helper",
        "src/util/numbers.py",
        "    return int(value + 0.5)\n",
        "    return int(value + 0.5)\n\n\ndef clamp(value, low, high):\n    return max(low, min(high, value))\n",
        [],
    ),
    ("css colour", "static/site.css", "color: #222;", "color: #1a1a1a;", []),
]


def record(n: int, title: str, status: str, context: str, decision: str) -> tuple[str, str]:
    """ADR n as a file name and text: adr-tools, MADR and zg records in turn."""
    slug = "-".join(title.lower().replace(",", "").replace("'", "").split())
    name = f"{n:04d}-{slug}.md"
    if n % 3 == 1:
        return name, (
            f"# {n}. {title}\n\nDate: 2024-01-{n:02d}\n\n## Status\n\n{status.capitalize()}\n\n"
            f"## Context\n\n{context}\n\n## Decision\n\n{decision}\n\n## Consequences\n\nWe keep to it.\n"
        )
    if n % 3 == 2:
        return name, (
            f"---\nstatus: {status}\ndate: 2024-01-{n:02d}\ndecision-makers: [team]\n---\n\n# {title}\n\n"
            f"## Context and Problem Statement\n\n{context}\n\n## Decision Outcome\n\n{decision}\n"
        )
    return name, (
        f"---\nid: ADR-{n:04d}\ntitle: {title}\nstatus: {status}\ndate: 2024-01-{n:02d}\n"
        f"code_anchors: []\n---\n\n# ADR-{n:04d}: {title}\n\n## Context\n\n{context}\n\n"
        f"## Decision\n\n{decision}\n"
    )


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def build(root: Path, env: dict[str, str]) -> None:
    root.mkdir()
    run(env, root, "git", "init", "-q", "-b", "main")
    for rel, text in CODE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "docs" / "adr").mkdir(parents=True)
    for n, (title, status, context, decision) in enumerate(ADRS, 1):
        name, text = record(n, title, status, context, decision)
        (root / "docs" / "adr" / name).write_text(text)
    run(env, root, "git", "add", "-A")
    run(env, root, "git", "commit", "-qm", "base")
    check = run(env, root, ZG, "adr", "check", "--all")
    assert check.returncode == 0, check.stdout + check.stderr
    index = run(env, root, ZG, "index", "--mode", "direct")
    assert index.returncode == 0, index.stderr


def suggest_once(
    env: dict[str, str], root: Path, mode: str, change: tuple
) -> tuple[list[dict], float]:
    """Stage one change, time `zg adr check --staged --suggest --json` (mode "none": without --suggest),
    unstage it."""
    _, rel, old, new, _ = change
    text = (root / rel).read_text()
    assert old in text, (rel, old)
    (root / rel).write_text(text.replace(old, new, 1))
    run(env, root, "git", "add", rel)
    flags = ["--suggest", "--mode", mode] if mode != "none" else []
    with Stopwatch() as clock:
        proc = run(env, root, ZG, "adr", "check", "--staged", "--json", *flags)
    run(env, root, "git", "reset", "-q", "--hard", "HEAD")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "note" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout).get("suggestions", []), clock.elapsed


def series(
    env: dict[str, str], root: Path, mode: str, runs: int
) -> list[tuple[list[dict], list[float]]]:
    out = []
    for change in CHANGES:
        walls, named = [], []
        for _ in range(runs):
            named, wall = suggest_once(env, root, mode, change)
            walls.append(wall)
        out.append((named, walls))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--json", action="store_true", help="print every suggestion with its score as JSON"
    )
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = private_env(Path(tmp), git_identity=("b", "b@x"))
        root = Path(tmp) / "shop"
        build(root, env)
        plain = series(env, root, "none", opts.runs)
        direct = series(env, root, "direct", opts.runs)
        assert run(env, root, ZG, "server", "on").returncode == 0
        try:
            suggest_once(env, root, "server", CHANGES[0])  # the daemon opens this workspace once
            server = series(env, root, "server", opts.runs)
        finally:
            run(env, root, ZG, "server", "off")
    print(
        f"{'change':<30} {'expected':<10} {'named (direct)':<30} {'same with daemon':<16} direct s  daemon s"
        "  no --suggest s"
    )
    for change, (named, dwalls), (snamed, swalls), (_, pwalls) in zip(
        CHANGES, direct, server, plain
    ):
        ids = [f"{s['id']}({s['score']:.2f})" for s in named]
        same = [s["id"] for s in named] == [s["id"] for s in snamed]
        print(
            f"{change[0]:<30} {','.join(change[4]) or '-':<10} {' '.join(ids) or '-':<30} {'yes' if same else 'NO':<16} "
            f"{statistics.median(dwalls):8.3f}  {statistics.median(swalls):8.3f}  {statistics.median(pwalls):8.3f}"
        )
    all_d = [w for _, ws in direct for w in ws]
    all_s = [w for _, ws in server for w in ws]
    all_p = [w for _, ws in plain for w in ws]
    print(
        f"median wall time per check: direct {statistics.median(all_d):.3f} s, daemon {statistics.median(all_s):.3f} s, "
        f"without --suggest {statistics.median(all_p):.3f} s ({len(all_d)} runs each)"
    )
    if opts.json:
        print(json.dumps({c[0]: named for c, (named, _) in zip(CHANGES, direct)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
