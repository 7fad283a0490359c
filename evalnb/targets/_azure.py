"""Azure OpenAI: a deployment's chat completions, with an ``api-key`` and an ``api-version``."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from evalnb.targets._openai import OpenAIChat

__all__ = ["AzureOpenAIChat"]


class AzureOpenAIChat(OpenAIChat):
    """POST ``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``.

    ``endpoint`` is the resource's (``https://RESOURCE.openai.azure.com``); the deployment
    is in the URL, so a variant's ``model`` param names another deployment. The key goes in
    the ``api-key`` header (``bearer=True``: ``Authorization: Bearer``, for an Entra ID
    token). The body is :class:`~evalnb.OpenAIChat`'s without ``model``; every other option
    is :class:`~evalnb.OpenAIChat`'s. (Azure's ``/openai/v1`` API takes the model in the
    body: that one is ``OpenAIChat(f"{endpoint}/openai/v1", model, headers=...)``.)

    >>> AzureOpenAIChat("https://me.openai.azure.com", "gpt-4o-mini",
    ...                 api_key_env="AZURE_OPENAI_API_KEY")  # doctest: +SKIP
    """

    kind = "azure-openai"
    model_in_route = True
    needs_model = True
    key_header = ("api-key", "")

    def __init__(
        self,
        endpoint: str,
        deployment: str,
        *,
        api_version: str = "2024-10-21",
        bearer: bool = False,
        query: Mapping[str, str] | None = None,
        **options: Any,
    ):
        if bearer:
            self.key_header = ("Authorization", "Bearer ")
        self.api_version = api_version
        query = {"api-version": api_version, **(query or {})}
        super().__init__(endpoint, deployment, query=query, **options)

    def _route(self, model: str | None) -> str:
        return f"/openai/deployments/{urllib.parse.quote(str(model), safe='')}/chat/completions"

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        return {"messages": messages, **params}

    def _models_url(self) -> None:  # type: ignore[override]
        return None

    def _settings(self) -> dict[str, Any]:
        return {"api_version": self.api_version, "auth": self.key_header[0]}
