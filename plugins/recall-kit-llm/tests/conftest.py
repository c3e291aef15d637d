"""Offline models for the tests, registered through `llm`'s own `register_models` /
`register_embedding_models` hooks (as llm's tests do), an isolated llm home (LLM_USER_PATH) and
an isolated cache (RECALL_KIT_CACHE). No network: every model here answers on this machine."""

from __future__ import annotations

import hashlib
import json
import re

import llm
import pytest

#: Words the scripted model uses for a paraphrase: none is in the example memories.
_FRESH = ("whereabouts", "gist", "particulars", "circumstance", "matter", "affair")


def _section(prompt: str, name: str) -> str:
    match = re.search(rf"{name}:\n(.*?)(?:\n\n[A-Z ]+\d*:\n|\n\nWrite|\n\nGrade|\n\nExtract|$)", prompt, re.S)
    return match.group(1) if match else ""


#: The scripted paraphrase for a memory it is told to miss: about no memory, judged 0.
OFF_TOPIC = "What are the particulars of the matter?"


def memory_tag(memory: str) -> str:
    return hashlib.sha256(memory.encode()).hexdigest()[:6]


def is_off_topic(memory: str) -> bool:
    return int(memory_tag(memory), 16) % 3 == 0


class ScriptedModel(llm.Model):
    """A deterministic chat model: answers recall-kit-llm's prompts from their text alone.

    Paraphrase: the first attempt copies the memory's words (rejected by the overlap check), the
    next one uses words of its own and the memory's tag (the first 6 hex digits of its sha256);
    for a memory whose tag is a multiple of 3, a question about nothing instead (`OFF_TOPIC`).
    Judge: 3 when the question holds the memory's tag, else the number of content words the
    question and memory share, capped at 3. Extraction: each pair of adjacent capitalised names."""

    model_id = "recall-test"
    in_process = True  # one call at a time, as any model in this process (the server tests run many)
    off_topic = OFF_TOPIC
    calls = 0
    #: Every prompt text received (kept in memory for the test's checks).
    prompts: list[str] = []

    def execute(self, prompt, stream, response, conversation=None):
        type(self).calls += 1
        text, system = prompt.prompt, prompt.system or ""
        type(self).prompts.append(text)
        if "search questions" in system and "MEMORY 2" not in text:
            memory = _section(text, "MEMORY")
            if "Attempt" not in text:
                yield json.dumps({"question": "What about " + memory[:80] + "?"})
                return
            tag = memory_tag(memory)
            if is_off_topic(memory):
                yield json.dumps({"question": OFF_TOPIC})
                return
            yield json.dumps({"question": f"What are the {_FRESH[int(tag, 16) % 6]} of {_FRESH[(int(tag, 16) + 1) % 6]} {tag}?",
                              "answer": f"  {tag} \n"})
        elif "search questions" in system:
            tag = hashlib.sha256(text.encode()).hexdigest()[:6]
            yield "Here it is:\n```json\n" + json.dumps({"question": f"How do the particulars of {tag} connect?"}) + "\n```"
        elif "judge" in system and "GRADE-100" in text and "Attempt" not in text:
            yield json.dumps({"grade": 100})  # off the schema (maximum 3)
        elif "judge" in system and memory_tag(_section(text, "MEMORY")) in _section(text, "QUESTION"):
            yield json.dumps({"grade": 3, "reason": "its tag"})
        elif "judge" in system:
            question = set(re.findall(r"[a-z]{4,}", _section(text, "QUESTION").lower()))
            memory = set(re.findall(r"[a-z]{4,}", _section(text, "MEMORY").lower()))
            yield json.dumps({"grade": min(3, len(question & memory)), "reason": "shared words"})
        elif "knowledge graph" in system:
            names = re.findall(r"\b[A-Z][a-z]+\b", _section(text, "MEMORY"))
            relations = [{"head": a, "relation": "with", "tail": b} for a, b in zip(names, names[1:]) if a != b]
            yield json.dumps({"relations": relations[:3]})
        else:
            yield "?"


class HashingEmbedding(llm.EmbeddingModel):
    """A deterministic embedding: words hashed into 64 buckets. `failures` transient errors first."""

    model_id = "recall-test-embed"
    in_process = True
    batch_size = 8
    failures = 0
    batches = 0

    def embed_batch(self, texts):
        type(self).batches += 1
        if type(self).failures > 0:
            type(self).failures -= 1
            raise TimeoutError("the test model times out")
        for text in texts:
            vector = [0.0] * 64
            for word in re.findall(r"\w+", text.lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            yield vector


class TestModels:
    __test__ = False

    @llm.hookimpl
    def register_models(self, register):
        register(ScriptedModel())

    @llm.hookimpl
    def register_embedding_models(self, register):
        register(HashingEmbedding())


@pytest.fixture
def llm_home(tmp_path, monkeypatch, recall_kit_plugin):
    """An empty llm home and recall-kit cache, the test models registered and declared local;
    recall-kit-llm registered with recall-kit (and recall-kit-graph and -dense when installed)."""
    import importlib

    for name in ("recall_kit_graph", "recall_kit_dense"):
        try:
            recall_kit_plugin(importlib.import_module(name), name=f"{name}-for-llm-tests")
        except ImportError:
            pass
    import recall_kit_llm

    recall_kit_plugin(recall_kit_llm, name="recall-kit-llm-test")
    home = tmp_path / "llm-home"
    home.mkdir()
    monkeypatch.setenv("LLM_USER_PATH", str(home))
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RECALL_KIT_LLM_LOCAL", "recall-test,recall-test-embed")
    for variable in ("OPENAI_API_KEY", "LLM_OPENAI_SHOW_RESPONSES"):
        monkeypatch.delenv(variable, raising=False)
    from llm.plugins import pm

    plugin = TestModels()
    pm.register(plugin, name="recall-kit-test-models")
    ScriptedModel.calls = 0
    ScriptedModel.prompts = []
    HashingEmbedding.failures = HashingEmbedding.batches = 0
    try:
        yield home
    finally:
        pm.unregister(plugin)


@pytest.fixture
def scripted_model(llm_home):
    """The scripted chat model's class (its `calls` counts the model calls made)."""
    return ScriptedModel


@pytest.fixture
def hashing_embedding(llm_home):
    """The hashing embedding model's class (`batches` counts calls, `failures` injects time-outs)."""
    return HashingEmbedding
