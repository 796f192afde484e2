"""What the HTTP API tests check of every answer: the problem shape, the message schema."""

from __future__ import annotations

from typing import Any

import requests

from pytest_tempinbox import __version__
from pytest_tempinbox.server.openapi import openapi_document

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def assert_problem(response: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert set(body) == PROBLEM_KEYS
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    return body


def message_schema() -> dict[str, Any]:
    document = openapi_document(__version__)
    return {"$ref": "#/components/schemas/Message", "components": document["components"]}
