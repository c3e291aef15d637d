"""recall-kit-mem0: mem0's `Memory` as a recall-kit retriever, measured beside recall-kit's own legs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_mem0.retriever import Mem0Retriever

__all__ = ["Mem0Retriever", "register_retrievers"]

# mem0, torch and the vector store load only when a run uses the retriever.
__getattr__ = lazy_attributes(__name__, {"Mem0Retriever": "recall_kit_mem0.retriever"})


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the `mem0` retriever."""
    from recall_kit_mem0.retriever import Mem0Retriever

    register("mem0", Mem0Retriever)
