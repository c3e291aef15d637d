"""Secrets masked out of command lines, URLs and DSNs wherever recall-kit writes or prints one.

One function, `mask_secrets`, applied where options are written (result files, sweep.json, a
sweep's table and file names), printed (one-line errors, progress lines) or quoted by a plugin in
a message. It masks, leaving the rest of the text as it was:

- a URL's userinfo: `http://user:PW@host` -> `http://user:***@host` (and `https://TOKEN@host` ->
  `https://***@host`);
- the value after a flag whose name is a secret's (`--api-key PW`, `--token=PW`, `--password`,
  `--client-secret`, ...; `-p PW`);
- `NAME=VALUE` where NAME ends in a secret's name (`password=PW` in a key=value DSN, `?api_key=PW`
  and `&token=PW` in a URL, `PGPASSWORD=PW`), quoted values included;
- `"NAME": "VALUE"` in JSON text (`{"api_key": "PW"}`);
- an `Authorization:` (or `X-API-Key:`, `Cookie:`) header's value, and `Bearer TOKEN`.

It errs towards masking: a harmless value after such a name (`-p 8080`) is masked too.
"""

from __future__ import annotations

import re
from typing import Any

#: What a secret is replaced with.
MASK = "***"

#: Names that hold secrets, as the last word of an option, flag or parameter name.
_SECRET_NAMES = (r"(?:api[-_]?key|apikey|(?-i:[kK]ey)|secret|token|password|passwd|passphrase|pwd|auth|"
                 r"authorization|credentials?|signature)")

#: A value: quoted (either quote, backslash escapes) or a run of characters up to a separator.
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""

_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie)(\s*:\s*)"
    r"((?:(?:bearer|basic|token|digest)\s+)?)([^\s\"',;]+)")
_FLAG = re.compile(
    rf"(?i)(?<![\w-])(--?(?:[a-z0-9]+[-_])*{_SECRET_NAMES}(?:[-_][a-z0-9]+)*|-p)(=|\s+)(?!-|\*\*\*)({_QUOTED}|\S+?(?=['\"]?[:.)]?(?:\s|$)))")
_JSON_PAIR = re.compile(rf"(?i)([\"'])([\w.-]*{_SECRET_NAMES})\1(\s*:\s*)({_QUOTED})")
_KEY_VALUE = re.compile(rf"(?i)(?<![\w.-])([\w.-]*{_SECRET_NAMES})(\s*=\s*)(?!\*\*\*)((?:(?:bearer|basic|token|digest)\s+)?(?:{_QUOTED}|[^\s&;,#]+?(?=['\"]?[:.)]?(?:[\s&;,#]|$))))")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^:/@\s?#]*):[^@\s]*@")
_TOKEN_USERINFO = re.compile(r"(?i)\b(https?://)[^:/@\s?#]+@")
_BEARER = re.compile(r"\b(Bearer\s+)(?!\*\*\*)[A-Za-z0-9._~+/=-]+")


def mask_secrets(text: str) -> str:
    """`text` (a command line, a URL, a DSN, or a message quoting one) with every secret masked;
    masking masked text changes nothing."""
    if not isinstance(text, str) or not text:
        return text
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{MASK}", text)
    text = _FLAG.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    text = _JSON_PAIR.sub(lambda m: f"{m[1]}{m[2]}{m[1]}{m[3]}{m[4][0]}{MASK}{m[4][0]}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    text = _USERINFO.sub(lambda m: f"{m[1]}{m[2]}:{MASK}@", text)
    text = _TOKEN_USERINFO.sub(lambda m: f"{m[1]}{MASK}@", text)
    return _BEARER.sub(lambda m: f"{m[1]}{MASK}", text)


def mask_values(value: Any) -> Any:
    """`value` with `mask_secrets` applied to every string in it (lists, tuples and dicts walked)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, (list, tuple)):
        return type(value)(mask_values(item) for item in value)
    if isinstance(value, dict):
        return {key: mask_values(item) for key, item in value.items()}
    return value


__all__ = ["MASK", "mask_secrets", "mask_values"]
