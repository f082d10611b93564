"""Words for generated sessions: genes drawn with a skewed (Zipf-like) frequency, diseases,
methods, paper metadata and links in the spellings search tools return."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from resolvers.events import PaperProduct

if TYPE_CHECKING:
    import random

GENES = [
    "TP53",
    "KRAS",
    "EGFR",
    "BRCA1",
    "BRCA2",
    "PIK3CA",
    "PTEN",
    "MYC",
    "APC",
    "BRAF",
    "CDKN2A",
    "RB1",
    "ERBB2",
    "NRAS",
    "IDH1",
    "ATM",
    "ARID1A",
    "NOTCH1",
    "SMAD4",
    "VHL",
    "KMT2D",
    "FBXW7",
    "CTNNB1",
    "NF1",
    "STK11",
    "KEAP1",
    "MET",
    "ALK",
    "ROS1",
    "RET",
    "FGFR1",
    "FGFR3",
    "JAK2",
    "FLT3",
    "NPM1",
    "DNMT3A",
    "TET2",
    "ASXL1",
    "EZH2",
    "CREBBP",
    "EP300",
    "SETD2",
    "BAP1",
    "PBRM1",
    "KDM6A",
    "MTOR",
    "TSC1",
    "TSC2",
    "CDK4",
    "CDK6",
    "MDM2",
    "CCND1",
    "AKT1",
    "MAP2K1",
    "POLE",
    "MSH2",
    "MLH1",
    "PALB2",
    "RAD51C",
    "CHEK2",
]
DISEASES = (
    "lung adenocarcinoma",
    "colorectal cancer",
    "glioblastoma",
    "breast carcinoma",
    "acute myeloid leukaemia",
    "pancreatic cancer",
    "melanoma",
    "ovarian cancer",
    "prostate cancer",
    "renal cell carcinoma",
    "hepatocellular carcinoma",
    "bladder cancer",
)
METHODS = (
    "single-cell RNA-seq",
    "CRISPR screen",
    "whole-exome sequencing",
    "proteomics",
    "survival analysis",
    "differential expression",
    "pathway enrichment",
    "organoid assay",
    "mouse xenograft",
    "cohort meta-analysis",
)
RELATIONS = (
    "drives",
    "suppresses",
    "is amplified in",
    "predicts response in",
    "is co-mutated with KRAS in",
    "modulates immune infiltration in",
    "confers resistance in",
)
FILLER = [
    "we",
    "observed",
    "a",
    "significant",
    "association",
    "between",
    "expression",
    "and",
    "outcome",
    "across",
    "cohorts",
    "the",
    "effect",
    "persisted",
    "after",
    "adjustment",
    "for",
    "stage",
    "age",
    "and",
    "treatment",
    "line",
    "knockdown",
    "reduced",
    "proliferation",
    "and",
    "increased",
    "apoptosis",
    "in",
    "vitro",
    "these",
    "results",
    "suggest",
    "a",
    "therapeutic",
    "vulnerability",
    "that",
    "warrants",
    "prospective",
    "validation",
]
SURNAMES = [
    "Smith",
    "Chen",
    "Garcia",
    "Müller",
    "Rossi",
    "Tanaka",
    "Kim",
    "Novak",
    "Silva",
    "Okafor",
    "Dubois",
    "Larsen",
]
_GENE_WEIGHTS = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(GENES))))


def pick_gene(rng: random.Random) -> str:
    return rng.choices(GENES, cum_weights=_GENE_WEIGHTS)[0]


def pick_disease(rng: random.Random) -> str:
    return rng.choice(DISEASES)


def objective(rng: random.Random, gene: str) -> str:
    return (
        f"Determine whether {gene} {rng.choice(RELATIONS)} {pick_disease(rng)} "
        f"using {rng.choice(METHODS)} and public cohorts."
    )


def sentence(rng: random.Random, gene: str) -> str:
    other = pick_gene(rng)
    tail = " ".join(rng.sample(FILLER, 12))
    return f"{gene} {rng.choice(RELATIONS)} {pick_disease(rng)} together with {other}; {tail}."


def artifact_name(rng: random.Random, gene: str) -> str:
    return f"{gene} {rng.choice(METHODS)} {rng.choice(('plot', 'table', 'model', 'heatmap'))}"


def new_link(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return f"https://doi.org/10.{rng.randint(1000, 9999)}/j.{rng.getrandbits(40):010x}"
    return f"https://europepmc.org/article/MED/{rng.randint(10_000_000, 39_999_999)}"


def respell(rng: random.Random, link: str) -> str:
    """Another spelling of ``link`` that normalises to the same Paper."""
    if link.startswith("https://doi.org/"):
        doi = link.removeprefix("https://doi.org/")
        return rng.choice(
            (link, f"http://dx.doi.org/{doi.upper()}", f"doi:{doi}", doi, f"{link}#abstract")
        )
    return rng.choice((link, link.replace("https://", "http://"), f"{link}/", f"{link}?utm_x=1"))


def paper(rng: random.Random, link: str, gene: str) -> PaperProduct:
    other = pick_gene(rng) if rng.random() < 0.5 else gene
    return PaperProduct(
        link=link,
        title=f"{other} {rng.choice(RELATIONS)} {pick_disease(rng)}: a {rng.choice(METHODS)} study",
        identifier=link.rsplit("/", 1)[-1],
        identifier_type="doi" if "doi" in link else "pmid",
        year=str(rng.randint(2005, 2025)),
        authors=tuple(rng.sample(SURNAMES, 3)),
        abstract=" ".join(rng.sample(FILLER, 30)).capitalize() + ".",
        source="europe-pmc",
    )
