"""The typed errors recall-kit raises; the CLI turns each into one line and a non-zero exit."""

from __future__ import annotations

import os

#: Set by the CLI's `--debug` (or RECALL_KIT_DEBUG=1): show plugin exception messages in full.
DEBUG = False


class RecallKitError(Exception):
    """Base of every error that is the user's to fix: the CLI prints it as one line."""


class DatasetError(RecallKitError):
    """A dataset file is missing, malformed, or inconsistent. The message names file and line."""


class UnknownNameError(RecallKitError, KeyError):
    """A name that is not registered. The message lists what is."""

    kind = "name"

    def __init__(self, name: str, available: list[str], message: str | None = None) -> None:
        self.name = name
        self.available = sorted(available)
        listing = ", ".join(self.available) if self.available else "(none installed)"
        super().__init__(
            message or f"Unknown {self.kind} {name!r}. Available: {listing}. See 'recall-kit plugins'."
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnknownRetrieverError(UnknownNameError):
    kind = "retriever"


class UnknownFusionError(UnknownNameError):
    kind = "fusion"


class UnknownMetricError(UnknownNameError):
    kind = "metric"

    def __init__(self, name: str, available: list[str], suggestion: str | None = None) -> None:
        # What to do comes first, the long list of families last: a reader (or a cut line) sees it.
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        listing = ", ".join(sorted(available)) or "(none installed)"
        super().__init__(name, available, (
            f"Unknown metric {name!r}.{hint} trec_eval and ir_measures names work too (ndcg_cut_10, nDCG@10, "
            f"P_10, RR); 'recall-kit list metrics' shows them all. Available families: {listing}."))


class UnknownReporterError(UnknownNameError):
    kind = "reporter"


class UnknownGeneratorError(UnknownNameError):
    kind = "query generator"


class UnknownJudgeError(UnknownNameError):
    kind = "judge"


class UnknownImporterError(UnknownNameError):
    kind = "importer"


class DuplicateNameError(RecallKitError):
    """Two plugins registered the same name."""


class RegistrationError(RecallKitError):
    """A plugin registered something of the wrong type."""


class OptionError(RecallKitError):
    """A bad `-o name.key=value`, `--weights` or config entry."""


class SpecError(RecallKitError):
    """A malformed `--retriever` / `--fusion` composition."""


class PluginRunError(RecallKitError):
    """A plugin raised while building an index or answering a query."""


def debug_enabled() -> bool:
    return DEBUG or bool(os.environ.get("RECALL_KIT_DEBUG"))


#: How Python's import system words an ImportError it raises itself (the error's `name` set): module
#: names and file paths only, never a plugin's data, so such messages are shown without --debug.
_IMPORT_SYSTEM_MESSAGES = ("No module named ", "cannot import name ", "attempted relative import ",
                           "import of ")


def _from_import_system(error: BaseException) -> bool:
    return (isinstance(error, ImportError) and error.name is not None
            and str(error).startswith(_IMPORT_SYSTEM_MESSAGES))


def describe_plugin_exception(error: BaseException) -> str:
    """`TypeName` and, only under --debug, the message: a plugin's message may quote memory text.
    An ImportError the import system raised (a missing module, a circular import) names modules
    and paths only, so its message is always shown."""
    name = type(error).__name__
    if isinstance(error, SystemExit):
        if error.code is None or isinstance(error.code, int):
            return f"SystemExit({error.code!r})"
        if debug_enabled():
            return f"SystemExit({error.code!r})"
        return "SystemExit (message withheld, it may quote memory text; --debug shows it)"
    if isinstance(error, OSError) and error.filename is not None and not debug_enabled():
        # A path is not memory text, and the user needs it: IsADirectoryError, a read-only file.
        return f"{name}: {error.filename}: {error.strerror or 'error'}"
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises still gets its one line
        return f"{name} (its message could not be read)"
    if not message:
        return name
    if debug_enabled() or _from_import_system(error):
        return f"{name}: {message}"
    return f"{name} (message withheld, it may quote memory text; --debug shows it)"


class OutputError(RecallKitError):
    """An output file that cannot be written (read-only folder, a directory, disk full)."""


class ResultFileError(RecallKitError):
    """A result JSON that cannot be read or does not match another it is compared with."""


class RecallKitWarning(UserWarning):
    """Something a number does not say on its own (a cutoff past the ranking's depth, ...)."""


class FailedQueriesError(RecallKitError):
    """Queries failed on a live system (a crash, a hang, an unreadable answer) beyond what
    `--max-failed` accepts, or a result holding failed queries was given to compare or gate."""
