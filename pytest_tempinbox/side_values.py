"""The values a message carries beside its mail: a check's results, a provider's record.

Frozen dataclasses like those of :mod:`~pytest_tempinbox.values`, which
re-exports them when first asked for (PEP 562): :class:`DkimResult` and
:class:`Unsubscribe` are what the checks find, :class:`ProviderRecord` what an
email provider's API kept of a send. Mail read over SMTP needs none of them,
so the server starts without creating them. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = ["DkimResult", "DkimStatus", "ProviderRecord", "Unsubscribe"]

JSON = dict[str, Any]
DkimStatus = Literal["pass", "fail", "none"]
"""The outcome of a DKIM check: ``pass``, ``fail``, or ``none`` for an unsigned message."""
_DKIM_STATUSES = ("pass", "fail", "none")


@dataclass(frozen=True, slots=True)
class DkimResult:
    """What the check of a message's DKIM signature found.

    ``domain`` and ``selector`` are the signature's ``d=`` and ``s=`` tags
    (``None`` for an unsigned message, or where the signature has none);
    ``reason`` is ``None`` unless ``result`` is ``"fail"``, when it says why:
    ``"body hash did not verify"`` (the body changed after signing),
    ``"signature did not verify"`` (a signed header changed, or the key is not
    the signer's), ``"no key for sel._domainkey.example.com"``,
    ``"bad key for ...: ..."`` or ``"malformed DKIM-Signature: ..."``.
    """

    result: DkimStatus
    domain: str | None = None
    selector: str | None = None
    reason: str | None = None

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"result", "domain", "selector", "reason"}``."""
        return {
            "result": self.result,
            "domain": self.domain,
            "selector": self.selector,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DkimResult:
        """Build a result from its JSON object form."""
        result = data["result"]
        if result not in _DKIM_STATUSES:
            raise ValueError(f"not a DKIM result: {result!r} (expected pass, fail or none)")
        return cls(
            result=cast(DkimStatus, result),
            domain=data.get("domain"),
            selector=data.get("selector"),
            reason=data.get("reason"),
        )


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """What a message's ``List-Unsubscribe`` and ``List-Unsubscribe-Post`` headers offer.

    ``http`` are its http and https URLs and ``mailto`` its mailto URIs, each in
    header order without repeats. ``post`` is the ``List-Unsubscribe-Post``
    value as written (None without one). ``dkim_covers`` tells whether a
    ``DKIM-Signature`` of the message names both headers in its ``h=`` tag
    (None for a message without one). ``one_click`` is True when RFC 8058 is
    met as far as the headers tell: an https URL, one ``List-Unsubscribe-Post``
    header of exactly ``List-Unsubscribe=One-Click``, and, if the message is
    DKIM-signed, a signature covering both headers. ``problems`` say, for
    people, what is wrong with the headers; empty when nothing is.
    """

    http: tuple[str, ...]
    mailto: tuple[str, ...]
    one_click: bool
    post: str | None = None
    dkim_covers: bool | None = None
    problems: tuple[str, ...] = ()

    @property
    def https(self) -> tuple[str, ...]:
        """The https URLs among :attr:`http`."""
        return tuple(url for url in self.http if url.lower().startswith("https:"))

    def to_json(self) -> JSON:
        """Return the JSON object form.

        ``{"http", "mailto", "one_click", "post", "dkim_covers", "problems"}``.
        """
        return {
            "http": list(self.http),
            "mailto": list(self.mailto),
            "one_click": self.one_click,
            "post": self.post,
            "dkim_covers": self.dkim_covers,
            "problems": list(self.problems),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unsubscribe:
        """Build an :class:`Unsubscribe` from its JSON object form."""
        return cls(
            http=tuple(data["http"]),
            mailto=tuple(data["mailto"]),
            one_click=data["one_click"],
            post=data.get("post"),
            dkim_covers=data.get("dkim_covers"),
            problems=tuple(data.get("problems", ())),
        )


@dataclass(frozen=True, slots=True)
class ProviderRecord:
    """What an email provider's API kept of a send that the mail does not show.

    ``name`` is the provider (``"sendgrid"``, ``"resend"``) and ``endpoint``
    the path it was sent to, as the provider names it (``/v3/mail/send``).
    ``template_id`` and ``template_data`` name a template stored at the
    provider and its variables (None without one); ``tags`` are the send's
    categories or tags, ``metadata`` its custom arguments, ``headers`` the
    custom headers it asked for, and ``options`` what else it said (a
    schedule, a sandbox mode...), as the request gave them.
    """

    name: str
    endpoint: str
    template_id: str | None = None
    template_data: Any = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> JSON:
        """Return the JSON object form.

        ``{"name", "endpoint", "template_id", "template_data", "tags", "metadata",
        "headers", "options"}``.
        """
        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "template_id": self.template_id,
            "template_data": self.template_data,
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "headers": dict(self.headers),
            "options": dict(self.options),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderRecord:
        """Build a record from its JSON object form."""
        return cls(
            name=data["name"],
            endpoint=data["endpoint"],
            template_id=data.get("template_id"),
            template_data=data.get("template_data"),
            tags=tuple(data.get("tags", ())),
            metadata=dict(data.get("metadata", {})),
            headers=dict(data.get("headers", {})),
            options=dict(data.get("options", {})),
        )
