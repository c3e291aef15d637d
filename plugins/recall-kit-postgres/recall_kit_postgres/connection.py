"""Connecting to PostgreSQL (an external server from a DSN, or the embedded one) and saying what
went wrong in one line, with any password masked."""

from __future__ import annotations

import os
import re
from typing import Any

from recall_kit.plugin import RecallKitError, mask_secrets

#: The environment variable read when no `dsn` option is given.
DSN_VARIABLE = "RECALL_KIT_PG_DSN"


class PostgresError(RecallKitError):
    """A connection, permission, table, column or extension problem, as one line."""


def safe_dsn(dsn: str) -> str:
    """The DSN with any password removed, fit for a message or a result file: the host's one
    masking (`user:PASSWORD@` in a URL, `password=...` in a key=value string, quoted values
    included, and a `password` query parameter of a URL)."""
    return mask_secrets(dsn)


def dsn_password(dsn: str) -> str | None:
    """The password a DSN carries, if any (to scrub it from server messages)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
        return str(value) if value else None
    except Exception:
        match = re.search(r"password\s*=\s*(\S+)", dsn, flags=re.IGNORECASE) or re.search(r"://[^:/@]*:([^@]*)@", dsn)
        return match.group(1) if match else None


def first_line(error: BaseException, secret: str | None = None) -> str:
    """An exception's first line, with `secret` (a password) masked wherever it appears."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    if secret:
        line = line.replace(secret, "***")
    return line


def configured_dsn(option: str | None) -> str | None:
    """The DSN a leg was given (`dsn` option, else $RECALL_KIT_PG_DSN); None: use the embedded server."""
    return option or os.environ.get(DSN_VARIABLE) or None


def connect(dsn: str, read_only: bool) -> Any:
    """An autocommit psycopg connection; `read_only` makes the session itself refuse writes."""
    import psycopg

    secret = dsn_password(dsn)
    try:
        # No automatic prepared statements: a cached plan would ignore the planner settings that
        # pgvector's exact reference search turns off (enable_indexscan).
        connection = psycopg.connect(dsn, autocommit=True, connect_timeout=10, prepare_threshold=None)
    except psycopg.Error as error:
        raise PostgresError(f"Cannot connect to PostgreSQL ({safe_dsn(dsn)}): {first_line(error, secret)}") from None
    except Exception as error:  # a malformed DSN can raise before libpq sees it
        raise PostgresError(f"Bad PostgreSQL DSN ({safe_dsn(dsn)}): {first_line(error, secret)}") from None
    if read_only:
        # Belt and braces: the session itself refuses writes.
        connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    return connection
