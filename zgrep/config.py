"""Layered configuration: flags > ZG_* environment > .zgrep.toml > user file > defaults.

Every value remembers where it came from (`zg config show`). Standard library only: the
thin client reads `mode` from here. A workspace file arrives with `git clone`: its GATED
settings apply only while the user trusts its current content (`zg trust`, a hash per root
kept in the user's config dir, like direnv's `allow`).
"""

from __future__ import annotations

import os

from zgrep import jsoncodec
from zgrep.fsutil import NotRegularFile, TooLarge, read_regular
from zgrep.service import ErrorCode, FixedCodeError
from zgrep.vocab import MODES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar, Literal

    from zgrep.vocab import Mode

    Provider = Literal["local", "ollama", "openai"]
    Fusion = Literal["rrf", "weighted"]

WORKSPACE_FILE = ".zgrep.toml"
TRUST_FILE = "trusted.json"
# Settings that send code off the machine, pick which secret to read, or point at a server
# (embedding.model goes with the provider: it names a model of the provider the file chose).
GATED = (
    "embedding.provider",
    "embedding.model",
    "embedding.url",
    "embedding.api_key_env",
    "embedding.allow_remote",
    "milvus.uri",
    "server.endpoint",
    "telemetry.enabled",
    "telemetry.include_queries",
)  # a cloned repository may not turn on recording

USER_ONLY = ("embedding.allow_secret_files",)
"""Settings no workspace file sets, trusted or not: only the user's own config, the environment or a flag."""
LIMITS = (
    "index.max_file_bytes",
    "index.chunk_context_lines",
    "search.candidates",
    "embedding.batch_size",
    "embedding.timeout",
    "embedding.max_retries",
    "server.idle_timeout",
    "server.autostart_idle_timeout",
    "server.probe_timeout_ms",
)
"""Resource limits an untrusted workspace file may lower but not raise above their defaults."""
TRUSTED_IGNORE_FILES = (".zgignore", ".ignore")
"""Ignore files at the root that decide, with the workspace file, what leaves the machine: part of the trust."""
CONFIG_MAX_BYTES = 1024 * 1024

Value = str | int | float | bool | list[str]
"""A setting's value: the type of its default."""
PROVIDERS: tuple[Provider, ...] = ("local", "ollama", "openai")
FUSIONS: tuple[Fusion, ...] = ("rrf", "weighted")


SECTIONS: list[type[Section]] = []
"""Every [section] class, in the order `zg config show` lists them."""


class Section:
    """One [section] of settings. A subclass names it (`class SearchSection(Section,
    name="search")`) and declares each setting as an annotated class attribute holding its default;
    an instance holds merged values. Plain classes, not dataclasses: the thin client builds these on
    every command."""

    section: ClassVar[str]

    def __init_subclass__(cls, name: str) -> None:
        cls.section = name
        SECTIONS.append(cls)

    def __init__(self, values: dict[str, Value]) -> None:
        for key in type(self).__annotations__:
            setattr(self, key, values[f"{self.section}.{key}"])

    @classmethod
    def defaults(cls) -> dict[str, Value]:
        """The section's settings by dotted name (`search.limit`) with their defaults, in
        declaration order."""
        return {f"{cls.section}.{key}": getattr(cls, key) for key in cls.__annotations__}


class EmbeddingSection(Section, name="embedding"):
    """[embedding]: which model embeds code, where it runs, and what may leave the machine."""

    provider: Provider = "local"
    model: str = ""
    url: str = ""
    api_key_env: str = ""
    batch_size: int = 64
    timeout: float = 30.0
    max_retries: int = 3
    allow_remote: bool = False
    # ignore-style patterns of secret-looking files a remote provider may get
    allow_secret_files: list[str] = []


class MilvusSection(Section, name="milvus"):
    """[milvus]: a Milvus server's URI instead of the workspace's Milvus Lite file."""

    uri: str = ""


class IndexSection(Section, name="index"):
    """[index]: what is indexed and how chunks are cut."""

    max_file_bytes: int = 1024 * 1024
    include_hidden: bool = False
    chunk_context_lines: int = 2


class SearchSection(Section, name="search"):
    """[search]: the default --limit and how the routes' candidates fuse."""

    limit: int = 10
    fusion: Fusion = "rrf"
    rrf_k: int = 60
    dense_weight: float = 0.6
    lexical_weight: float = 1.0
    symbol_weight: float = 1.0
    path_weight: float = 0.3
    candidates: int = 80


class ServerSection(Section, name="server"):
    """[server]: the daemon's endpoint, idle timeouts and autostart."""

    endpoint: str = ""
    idle_timeout: float = 1800.0
    # a daemon an auto-mode search started: release and exit sooner
    autostart_idle_timeout: float = 300.0
    probe_timeout_ms: int = 30
    # auto mode: a search that finds no daemon starts one for the next command
    autostart: bool = True


class AdrSection(Section, name="adr"):
    """[adr]: where decision records and spec/plan documents live."""

    dir: str = "docs/adr"
    doc_dirs: list[str] = ["docs/specs", "docs/plans"]


class TelemetrySection(Section, name="telemetry"):
    """[telemetry]: local JSONL usage lines in the user's state dir (zg stats); never sent."""

    enabled: bool = False  # a cloned repository may not turn on recording (GATED)
    include_queries: bool = False


DEFAULTS: dict[str, Value] = {
    "mode": "auto"
}  # `mode`, the one setting outside a section, then every section's
for _section in SECTIONS:
    DEFAULTS.update(_section.defaults())

MINIMUMS: dict[str, float] = {
    "index.max_file_bytes": 1,
    "index.chunk_context_lines": 0,
    "search.limit": 1,
    "search.rrf_k": 1,
    "search.candidates": 1,
    "search.dense_weight": 0,
    "search.lexical_weight": 0,
    "search.symbol_weight": 0,
    "search.path_weight": 0,
    "embedding.batch_size": 1,
    "embedding.timeout": 0.1,
    "embedding.max_retries": 0,
    "server.idle_timeout": 1,
    "server.autostart_idle_timeout": 1,
    "server.probe_timeout_ms": 1,
}
# Milvus caps a search's top-k (16,384): search.candidates x5 (path filters) stays within the widest
# pool search itself asks for, --limit 1000 x3 x5 = 15,000 (MAX_LIMIT and POST_FILTER_POOL_FACTOR in
# search/run.py); search.limit is the default --limit, so it has the flag's bound.
MAXIMUMS: dict[str, float] = {"search.candidates": 3000, "search.limit": 1000}
FALSE_WORDS = (
    "0",
    "false",
    "no",
    "off",
    "",
)  # a boolean's text (any case) that means off; the others, on
_INF = float("inf")  # (no `math`: its extension module costs ~0.7M instructions of a served search)
CHOICES: dict[str, tuple[str, ...]] = {
    "mode": MODES,
    "search.fusion": FUSIONS,
    "embedding.provider": PROVIDERS,
}


class ConfigError(FixedCodeError, ValueError):
    """A configuration file or value is invalid."""

    CODE = ErrorCode.CONFIG


def user_config_path() -> str:
    """The user-level config file under the XDG config directory."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.normpath(os.path.join(base, "zgrep", "config.toml"))  # (as pathlib spells it)


def in_ci() -> bool:
    """Whether the `CI` variable says this runs under CI: any value but 0, false, no, off or empty
    (any case)."""
    return os.environ.get("CI", "").strip().lower() not in FALSE_WORDS


def env_name(key: str) -> str:
    """`search.rrf_k` → `ZG_SEARCH_RRF_K`."""
    return "ZG_" + key.replace(".", "_").upper()


def _flatten(data: dict[str, object], prefix: str = "") -> dict[str, object]:
    """A parsed TOML document's settings by dotted name (its values not checked yet)."""
    out: dict[str, object] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, full + "."))
        else:
            out[full] = value
    return out


def _kind(key: str) -> str:
    """The type name a setting needs, for messages."""
    default = DEFAULTS[key]
    return "list of strings" if isinstance(default, list) else type(default).__name__


def _has_type(key: str, value: Any) -> bool:
    """Whether `value` already is of `key`'s type (an int may stand for a float; a bool is no
    number)."""
    default = DEFAULTS[key]
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and -_INF < value < _INF  # (not NaN either)
    if isinstance(default, list):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return type(value) is type(default)


def _parse_text(key: str, text: str) -> Any:
    """An environment variable's or a flag's text as `key`'s type (ValueError when it is not one)."""
    default = DEFAULTS[key]
    if isinstance(default, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in FALSE_WORDS:
            return False
        raise ValueError(text)
    if isinstance(default, (int, float)):
        return type(default)(text)
    if isinstance(default, list):
        return [v.strip() for v in text.split(",") if v.strip()]
    return text


def _coerce(key: str, value: Any, source: str, text: bool = False) -> Any:
    """`value` checked against `key`'s type; `text` values (environment, flags) are parsed first."""
    try:
        parsed = _parse_text(key, value) if text and isinstance(value, str) else value
    except ValueError:
        parsed = None
    if parsed is None or not _has_type(key, parsed):
        raise ConfigError(f"{source}: {key} = {value!r} is not a valid {_kind(key)}")
    return float(parsed) if isinstance(DEFAULTS[key], float) else parsed


def _unknown(key: str, source: str) -> ConfigError:
    """A typo'd section or setting, with the nearest known name."""
    import difflib  # only for a typo: the thin client imports this module

    section, dot, _ = key.partition(".")
    sections = sorted({k.split(".")[0] for k in DEFAULTS if "." in k})
    if dot and section not in sections and section not in DEFAULTS:
        near = difflib.get_close_matches(section, sections, n=1)
        hint = (
            f"; did you mean [{near[0]}]?"
            if near
            else f"; known sections: {', '.join(f'[{s}]' for s in sections)}"
        )
        return ConfigError(f"{source}: unknown section [{section}]{hint}")
    tail = key.rsplit(".", 1)[-1]
    near = [k for k in DEFAULTS if k.rsplit(".", 1)[-1] == tail] or difflib.get_close_matches(
        key, DEFAULTS, n=1
    )
    return ConfigError(
        f"{source}: unknown setting {key!r}" + (f"; did you mean {near[0]}?" if near else "")
    )


def _range(key: str) -> str:
    """A setting's allowed range, for messages: "at least 1" or "1 to 3000"."""
    low, high = MINIMUMS[key], MAXIMUMS.get(key)
    return f"at least {low:g}" if high is None else f"{low:g} to {high:g}"


def _check(key: str, value: Any, source: str) -> Any:
    """Refuse values outside a setting's range or choices."""
    if key in MINIMUMS and not MINIMUMS[key] <= value <= MAXIMUMS.get(key, _INF):
        raise ConfigError(f"{source}: {key} = {value!r} must be {_range(key)}")
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(f"{source}: {key} = {value!r}; choose from {', '.join(CHOICES[key])}")
    return value


def read_toml(path: str | os.PathLike[str]) -> tuple[dict[str, object], str | None]:
    """The file's settings, flattened, and the SHA-256 of the very bytes parsed (None: no file)."""
    try:
        raw = read_regular(path, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return {}, None
    except (NotRegularFile, TooLarge) as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    import hashlib  # only when a file exists: the thin client imports this module
    import tomllib

    try:
        return _flatten(tomllib.loads(raw.decode("utf-8"))), hashlib.sha256(raw).hexdigest()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


# --- trust -------------------------------------------------------------------------------


def trust_path() -> str:
    """The user's record of trusted workspace files: `{real root: sha256 of .zgrep.toml}`."""
    return os.path.join(os.path.dirname(user_config_path()), TRUST_FILE)


def trust_key(root: str | os.PathLike[str]) -> str:
    """Trust is per workspace root, by its real path."""
    return os.path.realpath(root)


def trusted_digests() -> dict[str, str]:
    """The trust record; unreadable or malformed means nothing is trusted."""
    try:
        with open(trust_path(), encoding="utf-8") as file:
            data = jsoncodec.loads(file.read())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def trust_digest(root: str | os.PathLike[str], toml_digest: str | None) -> str | None:
    """What `zg trust` records: the workspace file's SHA-256 alone, or, when the root holds
    `.zgignore` or `.ignore`, one SHA-256 over it and them (an edit of any withdraws the trust).
    None: no workspace file."""
    if toml_digest is None:
        return None
    import hashlib  # only when a workspace file exists: the thin client imports this module

    h = hashlib.sha256(toml_digest.encode())
    found = False
    for name in TRUSTED_IGNORE_FILES:
        try:
            data = read_regular(os.path.join(root, name), CONFIG_MAX_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:  # a FIFO, a device, too large: never trusted as it is
            data = f"unreadable: {type(exc).__name__}".encode()
        found = True
        h.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode())
    return h.hexdigest() if found else toml_digest


def trust_state(root: str | os.PathLike[str], digest: str | None) -> str:
    """ "trusted", "changed" (trusted once, edited since) or "untrusted" for a file with `digest`."""
    recorded = trusted_digests().get(trust_key(root))
    if recorded is not None and recorded == digest:
        return "trusted"
    return "changed" if recorded is not None else "untrusted"


def _untrusted_notice(
    root: str | os.PathLike[str], ignored: list[str], capped: list[str], state: str
) -> str:
    why = "it changed since you trusted it" if state == "changed" else "it is not trusted"
    parts = [f"ignored {', '.join(ignored)}"] if ignored else []
    parts += [f"capped {', '.join(capped)} at the default"] if capped else []
    return (
        f"{' and '.join(parts)} from {os.path.join(root, WORKSPACE_FILE)} ({why}; these settings send code off this machine, "
        f"pick a secret or a server, or raise a resource limit); review the file (and .zgignore, .ignore), then "
        f"run: zg trust {root}"
    )


def _exceeds_default(key: str, value: Any) -> bool:
    """Whether a workspace file's value for the limit `key` is a number above its default."""
    default = DEFAULTS[key]
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and isinstance(default, (int, float))
        and value > default
    )


class Config:
    """Merged settings by section (`cfg.search.limit`), by dotted name (`values`), and the source of
    each."""

    mode: Mode
    embedding: EmbeddingSection
    milvus: MilvusSection
    index: IndexSection
    search: SearchSection
    server: ServerSection
    adr: AdrSection
    telemetry: TelemetrySection

    def __init__(self, values: dict[str, Value], sources: dict[str, str], notice: str = "") -> None:
        self.values = values
        self.sources = sources
        self.notice = notice  # one line naming the workspace settings ignored until `zg trust`
        self.mode = values["mode"]  # type: ignore[assignment]  # (checked against MODES)
        for section in SECTIONS:
            setattr(self, section.section, section(values))

    def source(self, key: str) -> str:
        """Where `key`'s value came from (default, a file path, an env var, or a flag)."""
        return self.sources[key]

    @classmethod
    def load(
        cls, root: str | os.PathLike[str] | None, flags: Mapping[str, object] | None = None
    ) -> Config:
        """Merge all layers for workspace `root` (None: no workspace layer)."""
        values, sources = dict(DEFAULTS), dict.fromkeys(DEFAULTS, "default")

        def put(key: str, value: Any, source: str) -> None:
            values[key] = _check(key, value, source)
            sources[key] = source

        layers = [(user_config_path(), read_toml(user_config_path())[0])]
        notice = ""
        if root is not None:
            data, notice = _workspace_layer(root)
            layers.append((os.path.join(root, WORKSPACE_FILE), data))
        for source, data in layers:
            for key, value in data.items():
                if key not in DEFAULTS:
                    raise _unknown(key, source)
                put(key, _coerce(key, value, source), source)
        for key in DEFAULTS:
            name = env_name(key)
            if name in os.environ:
                put(key, _coerce(key, os.environ[name], name, text=True), f"env {name}")
        for key, value in (flags or {}).items():
            if key not in DEFAULTS:
                raise _unknown(key, "flag")
            if value is not None:
                put(key, _coerce(key, value, "flag", text=True), "flag")
        return cls(values, sources, notice)


def _workspace_layer(root: str | os.PathLike[str]) -> tuple[dict[str, object], str]:
    """The workspace file's settings, without the GATED ones and with LIMITS capped at their
    defaults unless its content (and the root's ignore files) is trusted; never the USER_ONLY ones.
    And the notice naming what was left out ("" when nothing was)."""
    data, digest = read_toml(os.path.join(root, WORKSPACE_FILE))
    data = {k: v for k, v in data.items() if k not in USER_ONLY}
    gated = [key for key in GATED if key in data]
    source = os.path.join(root, WORKSPACE_FILE)
    raised = [
        key
        for key in LIMITS
        if key in data
        and _exceeds_default(key, _check(key, _coerce(key, data[key], source), source))
    ]
    state = trust_state(root, trust_digest(root, digest)) if gated or raised else "trusted"
    if state == "trusted":
        return data, ""
    return (
        {k: (DEFAULTS[k] if k in raised else v) for k, v in data.items() if k not in gated},
        _untrusted_notice(root, gated, raised, state),
    )
