"""Paper identity (SPEC §3.7): every spelling of one identifier has one canonical form, and two
distinct identifiers never share one. The spellings are those literature tools and agents
return; the expected forms are written out from the rules in ``resolvers.links``."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolvers.links import normalize_link

DOI = "https://doi.org/10.1000/abc"
NATURE = "https://doi.org/10.1038/nature12373"
ARXIV = "https://arxiv.org/abs/2101.00001"
ARXIV_OLD = "https://arxiv.org/abs/hep-th/9901001"
PMID = "https://pubmed.ncbi.nlm.nih.gov/31452104"
PMCID = "https://pmc.ncbi.nlm.nih.gov/articles/PMC6712345"
ISBN = "isbn:9780262033848"

SPELLINGS: dict[str, list[str]] = {
    DOI: [
        "10.1000/abc",
        "10.1000/ABC",
        "doi:10.1000/abc",
        "DOI:10.1000/abc",
        "doi: 10.1000/abc",
        "DOI 10.1000/abc",
        "info:doi/10.1000/abc",
        "urn:doi:10.1000/abc",
        "doi.org/10.1000/abc",
        "dx.doi.org/10.1000/abc",
        "https://doi.org/10.1000/abc",
        "http://doi.org/10.1000/abc",
        "https://dx.doi.org/10.1000/abc",
        "http://dx.doi.org/10.1000/abc",
        "https://www.doi.org/10.1000/abc",
        "HTTPS://DOI.ORG/10.1000/ABC",
        "https://doi.org/10.1000/abc/",
        "https://doi.org/10.1000/abc?utm_source=feed",
        "https://doi.org/10.1000/abc?download=true",
        "https://doi.org/10.1000/abc#sec",
        "https://doi.org/10.1000/abc/?utm_source=feed#sec",
        "doi.org/10.1000/abc?x=1",
        "https://doi.org/10.1000%2Fabc",
        "  10.1000/abc  ",
        "https://doi.org/doi:10.1000/abc",
        "doi.org/DOI:10.1000/ABC",
        "https://doi.org/info:doi/10.1000/abc",
    ],
    # A registrant of any number of digits, with or without a prefix.
    "https://doi.org/10.1/xyz": ["10.1/xyz", "doi:10.1/xyz", "https://doi.org/10.1/XYZ"],
    "https://doi.org/10.12.3/x": ["10.12.3/x", "doi:10.12.3/X"],
    # An IPv4 address of 10/8 with a path is a URL.
    "https://10.0.0.1/data": ["10.0.0.1/data", "http://10.0.0.1/data/"],
    NATURE: [
        "10.1038/Nature12373",
        "doi:10.1038/NATURE12373",
        "https://doi.org/10.1038/nature12373",
    ],
    ARXIV: [
        "arXiv:2101.00001",
        "arxiv:2101.00001",
        "ARXIV: 2101.00001",
        "arXiv:2101.00001v1",
        "arXiv:2101.00001v12",
        "https://arxiv.org/abs/2101.00001",
        "http://arxiv.org/abs/2101.00001v2",
        "arxiv.org/abs/2101.00001",
        "https://arxiv.org/pdf/2101.00001",
        "https://arxiv.org/pdf/2101.00001v3.pdf",
        "https://arxiv.org/pdf/2101.00001.pdf",
        "https://arxiv.org/html/2101.00001v1",
        "https://export.arxiv.org/abs/2101.00001",
        "https://www.arxiv.org/abs/2101.00001/",
        "https://arxiv.org/abs/2101.00001?context=cs",
        "https://arxiv.org/abs/2101.00001#S2",
        "10.48550/arXiv.2101.00001",
        "https://doi.org/10.48550/arXiv.2101.00001",
    ],
    ARXIV_OLD: [
        "arXiv:hep-th/9901001",
        "arXiv:hep-th/9901001v2",
        "https://arxiv.org/abs/hep-th/9901001",
        "http://arxiv.org/pdf/hep-th/9901001v1.pdf",
    ],
    PMID: [
        "PMID:31452104",
        "pmid:31452104",
        "PMID: 31452104",
        "PMID 31452104",
        "info:pmid/31452104",
        "https://pubmed.ncbi.nlm.nih.gov/31452104/",
        "https://pubmed.ncbi.nlm.nih.gov/31452104",
        "pubmed.ncbi.nlm.nih.gov/31452104/?from_term=x",
        "http://www.ncbi.nlm.nih.gov/pubmed/31452104",
        "https://ncbi.nlm.nih.gov/pubmed/31452104",
    ],
    PMCID: [
        "PMC6712345",
        "pmc6712345",
        "PMCID:PMC6712345",
        "PMCID: PMC6712345",
        "pmcid:6712345",
        "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6712345/",
        "https://ncbi.nlm.nih.gov/pmc/articles/PMC6712345",
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC6712345/",
        "http://pmc.ncbi.nlm.nih.gov/articles/pmc6712345",
    ],
    ISBN: [
        "isbn:9780262033848",
        "ISBN:978-0-262-03384-8",
        "ISBN 978-0-262-03384-8",
        "ISBN-13: 978-0-262-03384-8",
        "isbn:0262033844",
        "ISBN 0-262-03384-4",
        "ISBN-10: 0 262 03384 4",
        "urn:isbn:9780262033848",
        "URN:ISBN:0-262-03384-4",
    ],
    "isbn:9780804429573": ["isbn:080442957x", "ISBN 0-8044-2957-X"],  # check digit X
    "urn:nbn:de:101-1234": ["urn:nbn:de:101-1234", "URN:NBN:de:101-1234", " urn:NBN:de:101-1234 "],
    "s2:649def34f8be52c8b66281af98ae884c09aef38b": [
        "s2:649def34f8be52c8b66281af98ae884c09aef38b",
        "S2:649def34f8be52c8b66281af98ae884c09aef38b",
    ],
    "openalex:W2741809807": ["openalex:W2741809807", "OpenAlex: W2741809807"],
    "https://x.org/a": [
        "https://x.org/a",
        "http://x.org/a",
        "HTTPS://X.ORG/a",
        "https://x.org/a/",
        "https://x.org/a#top",
        "https://user:secret@x.org/a",
        "https://x.org:443/a",
        "http://x.org:80/a",
        "https://x.org./a",
        "x.org/a",
        "//x.org/a",
        "https://x.org/a?utm_source=feed&fbclid=1&gclid=2",
    ],
    "https://x.org/a?flag": ["https://x.org/a?flag", "https://x.org/a/?flag#s", "x.org/a?flag"],
    "https://x.org/a?page=2&id=7": ["https://x.org/a?utm_medium=m&page=2&UTM_source=s&id=7"],
    "https://[::1]/a": ["https://[::1]/a", "http://[::1]:80/a", "[::1]/a", "https://[0:0::0:1]/a"],
    "https://e.com/a": ["https:/e.com/a", "HTTP:e.com/a"],  # a slash missing
    "https://[2001:db8::1]:8443/p": ["https://[2001:DB8::1]:8443/p/"],
    "https://localhost:8000/a": ["localhost:8000/a", "http://localhost:8000/a"],
    "https://x.org:8080/A": ["x.org:8080/A", "http://X.org:8080/A/"],
    # A host in Unicode is its punycode; a path's escapes have one form.
    "https://xn--bcher-kva.example/x": ["https://bücher.example/x", "https://BÜCHER.example/x/"],
    "https://x.org/~user": ["https://x.org/%7Euser", "https://x.org/%7euser/"],
    "https://example.jp/paper": ["https://example.jp。/paper", "https://example.jp\uff0e/paper"],
    "https://xn--strae-oqa.de/a": ["https://straße.de/a"],  # UTS #46: not strasse.de
    "https://x.org/q?x=%C3%A9&q=~": ["https://x.org/q?x=é&q=%7e", "x.org/q?x=%c3%a9&q=~"],
    # A DOI written out has no fragment: its "#" is the DOI's own, "%23" in its URL.
    "https://doi.org/10.1000/x%231": [
        "https://doi.org/10.1000/x%231",
        "doi.org/10.1000/X%231",
        "10.1000/x#1",
        "doi:10.1000/X#1",
        "https://doi.org/10.1000/x%231#sec",
    ],
    "https://doi.org/10.1002/(sici)1097-4571(199806)49:8<693::aid-asi4>3.0.co;2-%23": [
        "10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-#",
        "https://doi.org/10.1002/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-%23",
    ],
    "https://x.org/a%2Fb": ["https://x.org/a%2fb"],
    # What RFC 3986 allows in a path or query only escaped is escaped.
    "https://x.org/a%7Cb": ["https://x.org/a|b", "x.org/a%7cb"],
    "https://x.org/%7Bx%7D/%5E%60%5C": ["https://x.org/{x}/^`\\"],
    "https://x.org/q?a=%5B1%5D&b=%3Cc%3E": ["https://x.org/q?a=[1]&b=<c>"],
    # A control character in a DOI is escaped, as a space is.
    "https://doi.org/10.1000/a%09b": ["doi:10.1000/a\tb", "https://doi.org/10.1000/a%09b"],
    "https://x.org/caf%C3%A9%20au%20lait": [
        "https://x.org/café au lait",
        "x.org/caf%c3%a9%20au lait",
    ],
    # An old-style arXiv id: archive lower-case, subject class upper-case.
    "https://arxiv.org/abs/hep-th/9901001": ["arxiv:HEP-TH/9901001", "arXiv:hep-th/9901001v2"],
    "https://arxiv.org/abs/math.GT/0309136": [
        "arXiv:math.gt/0309136",
        "arxiv.org/abs/MATH.GT/0309136",
    ],
    "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66": [
        "URN:UUID:6E8BC430-9C3A-11D9-9669-0800200C9A66"
    ],
}

CASES = [(raw, canonical) for canonical, raws in SPELLINGS.items() for raw in raws]


def test_the_table_is_large() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("raw", "canonical"), CASES)
def test_a_spelling_becomes_its_canonical_form(raw: str, canonical: str) -> None:
    assert normalize_link(raw) == canonical


DISTINCT = [
    "arXiv:2101.00001",
    "arXiv:2203.12345",
    "arXiv:2101.00002",
    "arXiv:hep-th/9901001",
    "arXiv:hep-th/9901002",
    "PMID:31452104",
    "PMID:31452105",
    "PMC6712345",
    "PMC6712346",
    "isbn:9780262033848",
    "isbn:9780262046305",
    "ISBN 0-262-03384-5",  # a wrong check digit: not the valid 0-262-03384-4
    "urn:nbn:de:101-1234",
    "urn:nbn:de:101-1235",
    "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
    "s2:649def34f8be52c8b66281af98ae884c09aef38b",
    "s2:0000000000000000000000000000000000000000",
    "s2:12345",
    "10.1000/abc",
    "10.1000/abd",
    "10.1000/abc.v2",
    "10.1/abc",
    "10.10/abc",
    "10.1.1/abc",
    "10.0.0.1/abc",
    "https://x.org/a",
    "https://x.org/A",
    "https://x.org/a?flag",
    "https://x.org/a?flag=",
    "https://x.org/a?id=1",
    "https://x.org/a?id=2",
    "https://x.org:8080/a",
    "https://[::1]/a",
    "https://[::2]/a",
    "https://strasse.de/a",
    "https://straße.de/a",
    "https://doi.org/10.1000/x%231",  # a DOI holding a # (escaped in its URL)
    "https://doi.org/10.1000/x%232",
    "10.1000/x",
    "doi:10.1000/x#y",
    "10.1000/abc#abstract",
    "doi:10.1000/k",
    "doi:10.1000/\u212a",  # the Kelvin sign: DOIs ignore the case of ASCII letters only
    "https://x.org/q?a=b+c",  # a + in a query is not a space's escape for every server
    "https://x.org/q?a=b%20c",
    "https://x.org/a%2Fb",  # an escaped slash is not a path separator
    "https://x.org/a/b",
    "https://x.org/caf%C3%A9",
    "https://x.org/cafe",
    "urn:nbn:de:101-ABC",  # an NSS keeps its case but a UUID's
    "urn:nbn:de:101-abc",
    "PMID:abc",
    "pmcid:xyz",
]


def test_distinct_identifiers_never_merge() -> None:
    merged = [
        (first, second)
        for first, second in itertools.combinations(DISTINCT, 2)
        if normalize_link(first) == normalize_link(second)
    ]

    assert merged == []


@pytest.mark.parametrize(
    "raw",
    [
        *("", "  ", "doi:", "arXiv:", "s2:", "https://doi.org/"),
        # URLs without a host, or whose host is a number
        *("https://", "http://", "https:///x", "?a=1", "https://user@/x", "10.", "https://10"),
    ],
)
def test_nothing_identifying_is_empty(raw: str) -> None:
    assert normalize_link(raw) == ""


@pytest.mark.parametrize(("raw", "canonical"), CASES)
def test_the_canonical_form_is_a_fixed_point(raw: str, canonical: str) -> None:
    assert normalize_link(normalize_link(raw)) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        # A DOI's own "%" (or space) stays escaped in its URL: the URL names that DOI again.
        ("10.1000/x%2541", "https://doi.org/10.1000/x%252541"),
        ("https://doi.org/10.1000/x%252541", "https://doi.org/10.1000/x%252541"),
        ("10.1/a/%2f", "https://doi.org/10.1/a/%252f"),
        ("https://doi.org/10.1000/a%20b", "https://doi.org/10.1000/a%20b"),
        # A form one pass leaves unsettled is normalised again.
        ("https://example.org #sec", "https://example.org"),
        ("https://x.org/a%a%41", "https://x.org/a%AA"),
    ],
)
def test_a_link_normalises_to_a_form_that_names_it_again(raw: str, canonical: str) -> None:
    assert normalize_link(raw) == canonical
    assert normalize_link(canonical) == canonical


_PARTS = st.sampled_from(
    [*"aZ09/.?#&=%:-_~ é|@[]", "%2F", "%25", "%3f", "%7e", "%20", "%41", "utm_a=1", ".pdf"]
)
_STARTS = st.sampled_from(
    (
        *("", "https://", "HTTP://", "doi:", "10.1000/", "https://doi.org/10.1/", "arXiv:"),
        *("PMID:", "urn:", "x.org/", "PMC", "isbn:", "https://[::1]/", "localhost:80/"),
    )
)


@settings(max_examples=2_000)
@given(start=_STARTS, rest=st.lists(_PARTS, max_size=10))
def test_every_canonical_form_is_its_own(start: str, rest: list[str]) -> None:
    canonical = normalize_link(start + "".join(rest))
    assert normalize_link(canonical) == canonical
