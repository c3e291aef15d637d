"""Shell completion of option values (`recall-kit --install-completion`): registered retrievers,
fusions, metrics and reporters, and the paired tests, from the registry, never a hand-kept list."""

from __future__ import annotations

import typer


def _names(kind: str) -> list[str]:
    import recall_kit.registry as registry

    return list(getattr(registry, kind).names())


def _last_part(incomplete: str, separator: str) -> tuple[str, str]:
    """("fts5+", "de") for "fts5+de": the finished parts (with their separator) and the one typed."""
    head, _, tail = incomplete.rpartition(separator)
    return (head + separator if head else ""), tail


def complete_retriever(incomplete: str) -> list[str]:
    """Legs joined by '+': the last leg completes from the registered retrievers."""
    done, typed = _last_part(incomplete, "+")
    used = set(done.split("+"))
    return [done + name for name in _names("retrievers") if name.startswith(typed) and name not in used]


def complete_fusion(incomplete: str) -> list[str]:
    return [name for name in _names("fusions") if name.startswith(incomplete)]


def reporters_for(command: str | None) -> list[str]:
    """The registered reporters that render `command`'s report (a reporter's `commands`; empty: all)."""
    import recall_kit.registry as registry

    return [name for name, registration in registry.reporters.all().items()
            if not getattr(registration.obj, "commands", ()) or command in registration.obj.commands]


def complete_reporter(ctx: typer.Context, incomplete: str) -> list[str]:
    """The reporters that render this command's report."""
    return [name for name in reporters_for(ctx.info_name) if name.startswith(incomplete)]


def complete_metrics(incomplete: str) -> list[str]:
    """Comma-separated metrics: the last completes from each family's default names (recall@10),
    its bare name, and trec_eval's measure sets."""
    from recall_kit.measure.score.metric_names import TREC_EVAL_SETS, resolve_metrics

    done, typed = _last_part(incomplete, ",")
    defaults = [spec.name for spec in resolve_metrics(None)]
    choices = list(dict.fromkeys([*defaults, *_names("metrics"), *TREC_EVAL_SETS]))
    return [done + name for name in choices if name.startswith(typed)]


def complete_test(incomplete: str) -> list[str]:
    from recall_kit.decide.stats import PAIRED_TESTS

    return [name for name in PAIRED_TESTS if name.startswith(incomplete)]
