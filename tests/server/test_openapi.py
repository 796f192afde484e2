"""The OpenAPI document: its data file filled in from the code, and the models' JSON in its shapes.

The live API is held to the document by ``test_schemathesis.py`` (every route,
fuzzed, the answers checked against it) and the served messages by
``test_api_inboxes.py``; here the document is checked against its sources: the
limits, the problem codes, and what each model's ``to_json`` writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests

from pytest_tempinbox import (
    Address,
    Attachment,
    Envelope,
    Fault,
    Link,
    Message,
    ProviderRecord,
    Refusal,
    __version__,
    limits,
)
from pytest_tempinbox.checks.dkim import DkimResult
from pytest_tempinbox.checks.html_support import html_compatibility
from pytest_tempinbox.checks.links import LinkReport, LinkResult, Redirect
from pytest_tempinbox.checks.spam import SpamReport, SpamRule
from pytest_tempinbox.checks.unsubscribe import Unsubscribe
from pytest_tempinbox.errors import INTERNAL_ERROR, PROBLEMS
from pytest_tempinbox.server import openapi
from pytest_tempinbox.server.openapi import openapi_document
from pytest_tempinbox.server.store.refusals import (
    MAX_REFUSALS,
    MAX_SIMILAR_TO,
    REFUSAL_MAX_AGE,
    SIMILAR,
)
from pytest_tempinbox.transcripts import Transcript, TranscriptLine

from ..helpers import message_json

DOCUMENT = openapi_document(__version__)
PATHS: dict[str, Any] = DOCUMENT["paths"]
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
AT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)


def parameter(path: str, method: str, name: str) -> dict[str, Any]:
    """The parameter ``name`` of an operation."""
    (found,) = [p for p in PATHS[path][method]["parameters"] if p["name"] == name]
    return dict(found)


def body_field(path: str, name: str) -> dict[str, Any]:
    """The field ``name`` of the JSON body of ``POST path``."""
    content = PATHS[path]["post"]["requestBody"]["content"]["application/json"]
    return dict(content["schema"]["properties"][name])


def test_the_route_serves_the_filled_in_document(api: str, http: requests.Session) -> None:
    response = http.get(api + "/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == DOCUMENT
    assert response.json()["info"]["version"] == __version__


def test_no_placeholder_is_left_in_the_document() -> None:
    assert "${" not in json.dumps(DOCUMENT)


def test_the_limits_are_filled_in_from_their_one_source() -> None:
    assert body_field("/api/generate", "ttl")["maximum"] == limits.MAX_TTL
    assert body_field("/api/faults/{email}", "message")["maxLength"] == limits.MAX_FAULT_MESSAGE
    assert body_field("/api/faults/{email}", "delay")["maximum"] == limits.MAX_FAULT_DELAY
    assert body_field("/api/faults/{email}", "times")["maximum"] == limits.MAX_FAULT_TIMES
    for name in ("subject", "from", "text", "subaddress"):
        schema = parameter("/api/messages/{email}", "get", name)["schema"]
        assert schema["maxLength"] == limits.MAX_FILTER_LENGTH
    assert parameter("/api/refused", "get", "limit")["schema"]["maximum"] == MAX_REFUSALS
    assert parameter("/api/refused", "get", "similar_to")["schema"]["maxLength"] == MAX_SIMILAR_TO


def test_the_limits_named_in_texts_are_written_out() -> None:
    too_many_faults = PATHS["/api/faults/{email}"]["post"]["responses"]["409"]["description"]
    assert f"holds {limits.MAX_FAULTS_PER_INBOX} pending faults" in too_many_faults
    too_many_streams = PATHS["/api/events/{email}"]["get"]["responses"]["429"]["description"]
    per_inbox, in_all = limits.DEFAULT_MAX_STREAMS_PER_INBOX, limits.DEFAULT_MAX_STREAMS
    defaults = f"by default {per_inbox} and {in_all},"
    assert defaults in too_many_streams
    refused = PATHS["/api/refused"]["get"]["description"]
    assert f"its last {MAX_REFUSALS} refusals, for {REFUSAL_MAX_AGE / 60:g} minutes:" in refused
    similar_to = parameter("/api/refused", "get", "similar_to")["description"]
    assert f"a `similarity` of {SIMILAR:g} or more" in similar_to


def test_every_value_the_loader_fills_in_is_named_in_the_data_file() -> None:
    # A number copied into the file where the code has a name would leave that name unused.
    text = (Path(openapi.__file__).parent / openapi.DOCUMENT_FILE).read_text("utf-8")
    for name in [*openapi._VALUES, "VERSION"]:
        assert "${" + name + "}" in text, f"{openapi.DOCUMENT_FILE} does not name ${{{name}}}"


def test_the_problem_codes_come_from_the_table_of_problems() -> None:
    description = SCHEMAS["Problem"]["properties"]["code"]["description"]
    codes = [code for code in PROBLEMS if code != INTERNAL_ERROR]
    assert description == "A stable token: " + ", ".join(codes) + "."


def test_the_shared_parameters_and_answers_are_written_out_in_each_route() -> None:
    assert list(DOCUMENT["components"]) == ["schemas"]
    refs = [ref for ref in _refs(DOCUMENT) if not ref.startswith("#/components/schemas/")]
    assert refs == [], "every $ref of the served document is to a schema"
    emails = [
        parameter(path, method, "email")
        for path, item in PATHS.items()
        for method in item
        if "{email}" in path
    ]
    assert len(emails) > 10
    assert all(email == emails[0] for email in emails)


def test_a_placeholder_the_loader_does_not_know_is_named_in_the_error() -> None:
    with pytest.raises(LookupError, match=r"names \$\{MAX_NOTHING\}, which .* does not fill in"):
        openapi._fill({"maximum": "${MAX_NOTHING}"}, {"MAX_TTL": limits.MAX_TTL}, {})


def test_the_document_is_read_once_per_version() -> None:
    assert openapi_document(__version__) is DOCUMENT
    assert openapi_document("9.9.9")["info"]["version"] == "9.9.9"


def test_the_server_starts_without_reading_the_document() -> None:
    code = (
        "import sys, pytest_tempinbox;"
        "server = pytest_tempinbox.InboxServer(); server.start(); server.stop();"
        "print('pytest_tempinbox.server.openapi' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# --- the models' JSON in the document's shapes ------------------------------------------

_LINK_RESULT = LinkResult(
    url="https://app.test/confirm",
    ok=True,
    status=200,
    redirects=(Redirect(301, "https://app.test/confirm/"),),
    error=None,
    method="HEAD",
    elapsed=0.0123,
)
_BROKEN = LinkResult("https://gone.test/", False, None, (), "connection refused", None, 0.5)
_UNSUBSCRIBE = Unsubscribe(
    http=("https://app.test/unsubscribe",),
    mailto=("mailto:leave@app.test",),
    one_click=True,
    post="List-Unsubscribe=One-Click",
    dkim_covers=None,
    problems=(),
)
_ATTACHMENT = Attachment(0, "r.pdf", "application/pdf", 7, None, False)
_MESSAGE = message_json(
    subaddress="signup",
    message_id="<1@app.test>",
    from_={"name": "App", "email": "app@example.com"},
    to=[{"name": None, "email": "user@tempinbox.test"}],
    date="2026-01-02T00:00:00Z",
    text="Your code is 482913: https://app.test/confirm\n",
    html='<p><a href="https://app.test/confirm">go</a></p>',
    headers={"List-Unsubscribe": ["<https://app.test/unsubscribe>"]},
    attachments=[_ATTACHMENT.to_json()],
    links=["https://app.test/confirm"],
    link_details=[{"url": "https://app.test/confirm", "text": "go", "source": "html"}],
    codes=["482913"],
    defects=["a note"],
    dkim={"result": "pass", "domain": "app.test", "selector": "s1", "reason": None},
)
_MESSAGE["from"] = _MESSAGE.pop("from_")
_PROVIDER = ProviderRecord(
    "sendgrid",
    "/v3/mail/send",
    "d-welcome",
    {"name": "Ada"},
    ("welcome",),
    {"user": "7"},
    {"X-Campaign": "spring"},
    {"send_at": 1767225600},
)
_MESSAGE["provider"] = _PROVIDER.to_json()
# Each schema of the document, and representative values of its model, as to_json writes them.
MODELS: dict[str, list[Any]] = {
    "Address": [Address("App", "app@example.com"), Address(None, "user@tempinbox.test")],
    "Attachment": [_ATTACHMENT, Attachment(1, None, "image/png", 120, "<logo>", True)],
    "Link": [Link("https://app.test/", "go", "html"), Link("https://app.test/", None, "text")],
    "Message": [Message.from_json(_MESSAGE), Message.from_json(message_json())],
    "Unsubscribe": [_UNSUBSCRIBE, Unsubscribe((), ("mailto:x@app.test",), False)],
    "Provider": [_PROVIDER, ProviderRecord("resend", "/emails")],
    "Dkim": [DkimResult("pass", "app.test", "s1"), DkimResult("fail", "app.test", "s1", "why")],
    "Fault": [
        Fault("rcpt", code=550, message="5.7.1 No", times=2),
        Fault("data", delay=1.5),
        Fault("rcpt", disconnect=True),
    ],
    "Refusal": [
        Refusal(AT, "usr@tempinbox.test", "5.1.1 No such user", "127.0.0.1", "app.test"),
        Refusal(AT, "usr@tempinbox.test", "5.1.1 No such user", None, None, 0.9),
        Refusal(
            AT,
            "usr@tempinbox.test",
            "5.1.1 No such user",
            transcript=Transcript(
                "127.0.0.1", "app.test", None, None, AT, (TranscriptLine(0.5, "server", "550"),)
            ),
        ),
        Refusal(AT, "usr@tempinbox.test", "552 Error: Too much mail data", stage="data"),
    ],
    "LinkReport": [LinkReport((_LINK_RESULT, _BROKEN), ("mailto:x@app.test",), ("track",))],
    "LinkResult": [_LINK_RESULT, _BROKEN],
    "SpamReport": [SpamReport(2.5, 5.0, (SpamRule("HTML_MESSAGE", 0.001, "HTML included"),), "4")],
    "HtmlCompatibility": [html_compatibility('<div style="display: flex">Hi</div>')],
    "HtmlFeature": list(html_compatibility('<div style="display: flex">Hi</div>').features),
}


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every object that lists its properties closed to others."""
    closed: dict[str, Any] = {key: _strict(value) for key, value in schema.items()}
    if "properties" in closed and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


def _strict(value: Any) -> Any:
    if isinstance(value, dict):
        return strict(value)
    if isinstance(value, list):
        return [_strict(item) for item in value]
    return value


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def provider_schemas() -> set[str]:
    """The schemas the providers describe beside their modules: their requests and errors.

    Schemathesis (``test_schemathesis.py``) holds the provider endpoints to them.
    """
    folder = Path(openapi.__file__).parent / "providers"
    return {
        name
        for path in folder.glob("*.openapi.json")
        for name in json.loads(path.read_text("utf-8")).get("schemas", {})
    }


def test_every_schema_of_the_document_has_representative_values() -> None:
    own = set(SCHEMAS) - provider_schemas()
    assert set(MODELS) | {"Problem", "MessageSummary", "GeneratedInbox"} == own


def test_each_provider_endpoint_is_listed_under_its_prefix() -> None:
    from pytest_tempinbox.server.providers import ENDPOINTS, PREFIX

    for name, method, path, _ in ENDPOINTS:
        assert method.lower() in PATHS[f"{PREFIX}/{name}{path}"], (name, path)
    brevo = PATHS["/providers/brevo/v3/smtp/email"]["post"]
    assert set(brevo["responses"]) >= {"201", "400", "401", "429", "500", "503"}
    assert "Retry-After" in brevo["responses"]["429"]["headers"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_what_the_model_writes_is_in_its_schema_and_no_more(name: str) -> None:
    components = {"schemas": {key: strict(value) for key, value in SCHEMAS.items()}}
    schema = {"$ref": f"#/components/schemas/{name}", "components": components}
    for value in MODELS[name]:
        jsonschema.validate(value.to_json(), schema)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_field_of_the_schema_is_written_by_the_model(name: str) -> None:
    written = {key for value in MODELS[name] for key in value.to_json()}
    assert written == set(SCHEMAS[name]["properties"])


def test_the_envelope_is_the_messages_envelope_schema() -> None:
    envelope = Envelope("app@example.com", ("user@tempinbox.test",)).to_json()
    schema = strict(SCHEMAS["Message"]["properties"]["envelope"])
    jsonschema.validate(envelope, schema)
    assert set(envelope) == set(schema["properties"])
