"""Paper identity: the canonical form of a Paper link or ``sourcePaperLink`` (SPEC §3.7).

A Paper's key is the canonical form of its link. Every spelling of one identifier has the same
canonical form, two distinct identifiers never share one. Per kind:

* **DOI** — ``10.x/…``, ``doi:``, ``DOI ``, ``info:doi/``, ``urn:doi:``, ``[dx.|www.]doi.org/``
  with or without ``http(s)://``, one prefix after another (``doi.org/doi:10.x/…``; a doi.org
  URL drops its query, fragment and trailing ``/`` and decodes ``%2F``) →
  ``https://doi.org/<doi>``, its ASCII letters lower-cased (DOIs are case-insensitive in
  those only), a space or a control character escaped. A DOI written out, bare
  or after ``doi:``, is not a URL and has no fragment: a ``#`` there belongs to the DOI (the
  check character of a SICI DOI may be one), which its URL spells ``%23``. A bare
  ``10.a.b.c/…`` is the IPv4 address it spells, not a DOI;
* **arXiv** — ``arXiv:<id>``, ``arxiv.org/abs|pdf|html/<id>[vN][.pdf]`` on any arxiv.org host,
  the DOI ``10.48550/arXiv.<id>`` → ``https://arxiv.org/abs/<id>``, **without** the version
  (an old-style id's archive lower-cased, its subject class upper-cased: ``math.GT/0309136``);
* **PMID** — ``PMID:<n>``, ``PMID <n>``, ``info:pmid/<n>``, ``pubmed.ncbi.nlm.nih.gov/<n>``,
  ``ncbi.nlm.nih.gov/pubmed/<n>`` → ``https://pubmed.ncbi.nlm.nih.gov/<n>``;
* **PMCID** — ``PMCID:PMC<n>``, ``PMC<n>``, ``pmcid:<n>``, ``ncbi.nlm.nih.gov/pmc/articles/PMC<n>``,
  ``pmc.ncbi.nlm.nih.gov/articles/PMC<n>`` → ``https://pmc.ncbi.nlm.nih.gov/articles/PMC<n>``;
* **ISBN** — ``isbn:``, ``ISBN ``, ``ISBN-10:``, ``ISBN-13:``, ``urn:isbn:``, hyphens and spaces
  ignored → ``isbn:<ISBN-13>`` (a valid ISBN-10 becomes its ISBN-13);
* **URN** — ``urn:<nid>:<nss>`` → ``urn:<nid lower-cased>:<nss>`` (a ``urn:uuid:`` NSS
  lower-cased too: a UUID has no case);
* **other** ``<scheme>:<value>`` (``s2:…``, ``openalex:W…``) → ``<scheme lower-cased>:<value>``;
* **URL** — anything else, per SPEC §3.7 (``_url``), a host in Unicode written in ASCII
  (punycode, UTS #46) and the percent-escapes of its path and query in one form (``%7E`` is
  ``~``, ``é`` is ``%C3%A9``, ``|`` is ``%7C``: what RFC 3986 allows there only escaped).

Decisions:

* the arXiv version is dropped: ``2101.00001v1`` and ``v2`` are one work, cited by the same
  evidence; the version a search reported stays visible in the Paper's ``identifier``;
* identifiers with a resolver (DOI, arXiv, PMID, PMCID) become its URL, so a link is clickable
  whatever the search tool returned; ISBN, URN and other schemes have none and stay ids;
* an identifier that does not parse as its kind (``PMID:abc``, an ISBN with a wrong check
  digit) is kept whole like any other ``scheme:value``: it never merges with a valid one;
* ``<name>:<digits>`` is a host and port only for ``localhost`` or a dotted name
  (``x.org:8080/a``); otherwise ``<name>`` is a scheme (``s2:12345``).
"""

from __future__ import annotations

import ipaddress
import re
import string
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import idna

_DOI_PREFIX = re.compile(
    r"^(?:(?:https?://)?(?:dx\.|www\.)?doi\.org/|doi:\s*|doi\s+|info:doi/|urn:doi:)",
    re.IGNORECASE,
)
# ``10.<registrant>/<suffix>``, the registrant digits (dot-separated for a sub-registrant),
# but not an IPv4 address of the 10/8 network with a path (``_IP_PATH``).
_BARE_DOI = re.compile(r"^10(?:\.\d{1,9})+/\S")
_IP_PATH = re.compile(r"^10\.\d{1,3}\.\d{1,3}\.\d{1,3}/")
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_ID = re.compile(
    r"^(?P<id>\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Za-z-]+)?/\d{7})(?:v\d+)?(?:\.pdf)?$", re.IGNORECASE
)
_ARXIV_PREFIX = re.compile(r"^arxiv:\s*", re.IGNORECASE)
_ARXIV_URL = re.compile(
    r"^(?:https?://)?(?:[a-z0-9-]+\.)?arxiv\.org/(?:abs|pdf|html)/([^?#]+?)/?(?:[?#].*)?$",
    re.IGNORECASE,
)
_PMID = re.compile(r"^(?:pmid|info:pmid/)\s*:?\s*(\d{1,12})$", re.IGNORECASE)
_PMID_URL = re.compile(
    r"^(?:https?://)?(?:pubmed\.ncbi\.nlm\.nih\.gov|(?:www\.)?ncbi\.nlm\.nih\.gov/pubmed)"
    r"/(\d{1,12})/?(?:[?#].*)?$",
    re.IGNORECASE,
)
_PMCID = re.compile(r"^(?:pmcid\s*:?\s*)?(?:pmc)?(\d{1,12})$", re.IGNORECASE)
_PMCID_BARE = re.compile(r"^pmc\d{1,12}$", re.IGNORECASE)
_PMC_URL = re.compile(
    r"^(?:https?://)?(?:(?:www\.)?ncbi\.nlm\.nih\.gov/pmc|pmc\.ncbi\.nlm\.nih\.gov)"
    r"/articles/(pmc\d{1,12})/?(?:[?#].*)?$",
    re.IGNORECASE,
)
_ISBN = re.compile(r"^(?:urn:isbn:|isbn(?:-1[03])?\s*:?\s*)([0-9Xx][0-9Xx\s-]*)$", re.IGNORECASE)
_URN = re.compile(r"^urn:([a-z0-9][a-z0-9-]{0,31}):(.+)$", re.IGNORECASE)
_SCHEME = re.compile(r"^([a-z][a-z0-9+-]*):(.*)$", re.IGNORECASE)
_HOST_PORT = re.compile(r"^\d+(?:[/?#]|$)")
_TRACKING = re.compile(r"^(utm_.*|fbclid|gclid)$", re.IGNORECASE)
_DEFAULT_PORTS = {"https": 443, "http": 80}
_WEB_SCHEME = re.compile(r"^(https?):/?(?!/)", re.IGNORECASE)  # one slash or none


# How many times a link is normalised again, at most, until it is its own canonical form.
_ROUNDS = 8


def normalize_link(raw: str) -> str:
    """The canonical form of a Paper link; ``""`` when nothing identifying is left.

    The canonical form is a fixed point: a Paper's id holds it, and a lookup by that id
    normalises it again, so it must name the same Paper. One pass may leave work for the next
    (an escape that decodes to another escape, ``%2541``; a host that ends in a space once its
    fragment is cut); it runs until nothing changes, and a link that never settles identifies
    nothing."""
    link = _normalize_once(raw)
    for _ in range(_ROUNDS):
        again = _normalize_once(link)
        if again == link:
            return link
        link = again
    return ""


def _normalize_once(raw: str) -> str:
    link = raw.strip()
    if not link:
        return ""
    for canonical in (_doi, _arxiv, _pmid, _pmcid, _isbn, _scheme_value):
        found = canonical(link)
        if found is not None:
            return found
    return _url(link)


def _doi(link: str) -> str | None:
    prefix = _DOI_PREFIX.match(link)
    if prefix is None and not (_BARE_DOI.match(link) and not _IP_PATH.match(link)):
        return None
    doi = link
    while prefix is not None:  # ``https://doi.org/doi:10.…`` names the DOI after both
        doi = doi[prefix.end() :]
        if "doi.org" in prefix.group(0).lower():
            # A URL's query and fragment are cut before its escapes are read: ``%23`` is a
            # ``#`` of the DOI itself.
            doi = unquote(re.split(r"[?#]", doi, maxsplit=1)[0])
        prefix = _DOI_PREFIX.match(doi)
    doi = doi.strip().rstrip("/")
    if not doi:
        return ""
    arxiv = _ARXIV_DOI.match(doi)
    if arxiv is not None:
        found = _arxiv_id(arxiv.group(1))
        if found is not None:
            return found
    # What its URL would read otherwise (``%``, ``#``, ``?``, a space) stays escaped there, so
    # that the URL names the DOI again: ``10.1000/x%41`` is not ``10.1000/xa``.
    return f"https://doi.org/{doi.translate(_ASCII_LOWER).translate(_DOI_ESCAPES)}"


# DOIs are case-insensitive in their ASCII letters only: "\u212a" (the Kelvin sign) is not "k".
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_DOI_ESCAPES = str.maketrans(
    {"%": "%25", "#": "%23", "?": "%3F"}
    | {chr(code): f"%{code:02X}" for code in (*range(0x21), 0x7F)}  # a space, controls
)


def _arxiv(link: str) -> str | None:
    prefix = _ARXIV_PREFIX.match(link)
    if prefix is not None:
        value = link[prefix.end() :].strip()
        return _arxiv_id(value) or ("" if not value else f"arxiv:{value}")
    url = _ARXIV_URL.match(link)
    return _arxiv_id(url.group(1)) if url is not None else None


def _arxiv_id(value: str) -> str | None:
    found = _ARXIV_ID.match(value.strip())
    if found is None:
        return None
    identifier = found.group("id")
    if "/" in identifier:  # old style: the archive lower-cased, its subject class upper-cased
        archive, _, number = identifier.partition("/")
        name, dot, subject = archive.partition(".")
        identifier = f"{name.lower()}{dot}{subject.upper()}/{number}"
    return f"https://arxiv.org/abs/{identifier}"


def _pmid(link: str) -> str | None:
    found = _PMID.match(link) or _PMID_URL.match(link)
    return f"https://pubmed.ncbi.nlm.nih.gov/{int(found.group(1))}" if found else None


def _pmcid(link: str) -> str | None:
    url = _PMC_URL.match(link)
    value = url.group(1) if url else link
    if url is None and not (_PMCID_BARE.match(link) or link.lower().startswith("pmcid")):
        return None
    found = _PMCID.match(value)
    return f"https://pmc.ncbi.nlm.nih.gov/articles/PMC{int(found.group(1))}" if found else None


def _isbn(link: str) -> str | None:
    found = _ISBN.match(link)
    if found is None:
        return None
    digits = re.sub(r"[\s-]", "", found.group(1)).upper()
    if len(digits) == 10 and _isbn10_valid(digits):
        digits = _isbn13("978" + digits[:9])
    # Anything else (an ISBN-13, or not a valid ISBN at all) keeps its digits: a wrong check
    # digit never turns into the valid ISBN it resembles.
    return f"isbn:{digits}"


def _isbn10_valid(digits: str) -> bool:
    if not (digits[:9].isdigit() and (digits[9].isdigit() or digits[9] == "X")):
        return False
    values = [int(d) for d in digits[:9]] + [10 if digits[9] == "X" else int(digits[9])]
    return sum((10 - i) * v for i, v in enumerate(values)) % 11 == 0


def _isbn13(first12: str) -> str:
    total = sum((3 if i % 2 else 1) * int(d) for i, d in enumerate(first12))
    return first12 + str((10 - total % 10) % 10)


def _scheme_value(link: str) -> str | None:
    """A URN or another ``scheme:value`` identifier; ``None`` for a URL or ``host:port``."""
    found = _SCHEME.match(link)
    if found is None:
        return None
    scheme, value = found.group(1).lower(), found.group(2).strip()
    if value.startswith("//") or scheme in _DEFAULT_PORTS:
        return None  # a URL (``http:x.org`` included)
    if scheme == "localhost" and _HOST_PORT.match(value):
        return None
    if not value:
        return ""
    urn = _URN.match(link)
    if urn is not None:
        nid, nss = urn.group(1).lower(), urn.group(2).strip()
        return f"urn:{nid}:{nss.lower() if nid == 'uuid' else nss}"  # a UUID has no case
    return f"{scheme}:{value}"


def _url(raw: str) -> str:
    """A URL per SPEC §3.7: ``http`` becomes ``https``; scheme and host lower-cased; user-info,
    default port, fragment, trailing ``/`` and tracking parameters dropped; other query
    parameters kept exactly as written (``?flag`` stays ``?flag``); IPv6 hosts keep their
    brackets; a scheme-less ``host/path`` gets ``https://``. A URL without a host, or whose
    host is a bare number, identifies nothing (``""``).

    A link ``urlsplit`` refuses (e.g. an unclosed ``[``) is kept as written: it can still be
    stored and looked up, it just has no other spelling."""
    raw = _WEB_SCHEME.sub(lambda found: found.group(1) + "://", raw)  # ``https:/x.org``
    link = raw if "://" in raw else "https://" + raw.lstrip("/")
    try:
        parts = urlsplit(link)
        port = parts.port
    except ValueError:
        return raw
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if not host or host.isdigit():
        return ""  # no host (``https://``, ``?a=1``, ``https:///x``) or a number (``10.``)
    host = f"[{_ipv6(host)}]" if ":" in host else _ascii_host(host)
    if port is not None and port != _DEFAULT_PORTS.get(scheme) and port != 443:
        host = f"{host}:{port}"
    query = "&".join(
        _PERCENT.sub(_percent, _RAW.sub(_escaped, item))
        for item in parts.query.split("&")
        if item and not _TRACKING.match(unquote(item.split("=", 1)[0]))
    )
    scheme = "https" if scheme == "http" else scheme
    path = _PERCENT.sub(_percent, _RAW.sub(_escaped, parts.path)).rstrip("/")
    return urlunsplit((scheme, host, path, query, ""))


def _ipv6(host: str) -> str:
    """An IPv6 address in its one (compressed) form: ``0:0:0:0:0:0:0:1`` is ``::1``."""
    try:
        return ipaddress.IPv6Address(host).compressed
    except ValueError:
        return host


def _ascii_host(host: str) -> str:
    """A host in Unicode as its ASCII (punycode) form, as browsers send it (UTS #46,
    non-transitional: ``straße.de`` stays apart from ``strasse.de``): one name, one spelling.
    A name IDNA refuses (an empty label, one too long, a disallowed character) stays as
    written."""
    if host.isascii():
        return host
    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii").rstrip(".")
    except idna.IDNAError:
        return host


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
# What a path or query holds only escaped: a space, controls, non-ASCII text, and the ASCII
# characters RFC 3986 allows nowhere in them (``a|b`` is ``a%7Cb``).
_RAW = re.compile(r"[^\x21-\x7e]|[\"<>\\^`{|}\[\]]")


def _escaped(character: re.Match[str]) -> str:
    return quote(character.group(0), safe="")


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _percent(escape: re.Match[str]) -> str:
    """A percent-escape of a path in its one form (RFC 3986 §6.2.2): an unreserved character
    as itself (``%7E`` is ``~``), any other with upper-case digits (as ``_escaped`` writes a
    space or non-ASCII text: ``café`` is ``caf%C3%A9``)."""
    character = chr(int(escape.group(1), 16))
    return character if character in _UNRESERVED else f"%{escape.group(1).upper()}"
