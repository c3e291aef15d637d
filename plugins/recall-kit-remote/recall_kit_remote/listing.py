"""A live system's listing of its memories, read page by page (cursor, offset or page number):
what `dataset import mcp|http` and the adapters' `sensitive_listing` share, and the id map that
turns a service's own ids back into the dataset's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.plugin import DatasetError, OptionError, read_jsonl
from recall_kit_remote.base import PAGING_KEYS, QueryFailed, as_hit_id, flagged_ids, select

#: The most pages a listing is read in (a server whose cursor never ends is cut off, and said).
MAX_PAGES = 100_000


@dataclass(frozen=True)
class ListingOptions:
    """Where the memories are in the listing the service answers, and where SRC's judgments are."""

    #: Path to the list of memories in the answer ("" for a bare list).
    memories: str = "results"
    #: Path to a memory's id in an entry.
    id: str = "id"
    #: Path to a memory's text in an entry (a list of strings, as `observations`, is joined by spaces).
    content: str = "content"
    #: Path to a memory's scope (a user or conversation) in an entry (empty: none).
    scope: str = ""
    #: Path to a flag in an entry marking the memory sensitive (empty: none).
    sensitive: str = ""
    #: How the listing pages: "" (one call holds it all), "cursor", "offset" or "page".
    paging: str = ""
    #: The argument (mcp) or URL parameter (http) that asks for a page: its cursor, offset or number.
    page_arg: str = ""
    #: cursor: the path to the next page's cursor in an answer (absent, empty or null: the last page).
    next_cursor: str = "next_cursor"
    #: The argument or parameter holding the page size (empty: not sent), and the size asked.
    page_size_arg: str = ""
    page_size: int = 100
    #: page: the first page's number.
    first_page: int = 1
    #: The server's ids mapped to the dataset's: a JSON lines file of {"server_id", "id"}, as
    #: `mcp.id_map` / `http.id_map` write it after a fill (empty: the server's ids are the dataset's).
    id_map: str = ""

    def __post_init__(self) -> None:
        if self.paging not in ("", "cursor", "offset", "page"):
            raise OptionError(f"--paging must be cursor, offset or page, not {self.paging!r}.")
        if self.paging and not self.page_arg:
            raise OptionError(f"--paging {self.paging} needs --page-arg: the argument that asks for a page.")
        if self.page_size < 1:
            raise OptionError("--page-size must be at least 1.")


def listed_flagged(fetch: Any, listing: dict[str, Any]) -> set[str]:
    """The ids a sensitive listing flags (`mcp.sensitive_listing`), read page by page as its
    paging keys say (the same as `dataset import`'s: "paging", "page_arg", ...)."""
    paging = ListingOptions(memories=str(listing.get("memories", "")),
                            **{key: value for key, value in listing.items() if key in PAGING_KEYS})
    return flagged_ids(page_through(fetch, paging), {**listing, "memories": ""})


def read_id_map(path: str) -> dict[str, str]:
    """The server's ids -> the dataset's, from a JSON lines file of {"server_id", "id"}."""
    mapped: dict[str, str] = {}
    for number, row in read_jsonl(Path(path)):
        server, doc = as_hit_id(row.get("server_id")), as_hit_id(row.get("id"))
        if server is None or doc is None:
            raise DatasetError(f"{Path(path).name}:{number}: needs \"server_id\" and \"id\" (strings or integers)")
        mapped[server] = doc
    return mapped


def page_through(fetch: Any, options: ListingOptions) -> list[Any]:
    """Every memory entry of a listing, page after page: `fetch(arguments)` answers one page given
    the paging arguments to add (none for a listing in one answer). Cursor paging ends at a page
    without a next cursor; offset and page paging at an empty page."""
    sized = {options.page_size_arg: options.page_size} if options.page_size_arg else {}
    entries: list[Any] = []
    cursor: Any = None
    seen_cursors: set[str] = set()
    for number in range(MAX_PAGES):
        if not options.paging:
            arguments: dict[str, Any] = {}
        elif options.paging == "cursor":
            arguments = {**sized, **({options.page_arg: cursor} if cursor is not None else {})}
        elif options.paging == "offset":
            arguments = {**sized, options.page_arg: len(entries)}
        else:
            arguments = {**sized, options.page_arg: options.first_page + number}
        payload = fetch(arguments)
        try:
            page = select(payload, options.memories)
        except QueryFailed as failure:
            raise DatasetError(f"The listing: {failure}.") from None
        if not isinstance(page, list):
            raise DatasetError(f"The listing's {options.memories or 'answer'!r} is {type(page).__name__}, not a list.")
        entries += page
        if not options.paging or (options.paging != "cursor" and not page):
            return entries
        if options.paging == "cursor":
            try:
                cursor = select(payload, options.next_cursor)
            except QueryFailed:
                cursor = None
            if cursor in (None, "") or str(cursor) in seen_cursors:
                return entries
            seen_cursors.add(str(cursor))
    raise DatasetError(f"The listing still had pages after {MAX_PAGES:,} (--paging {options.paging}).")
