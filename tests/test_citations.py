"""The Cite panel's BibTeX and CITATION.cff (fast: no model, no browser)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

import accapp
from accapp.service import citations as c

ROOT = Path(__file__).resolve().parents[1]


def test_every_key_is_present_once_and_has_a_use():
    text = c.BIB_PATH.read_text(encoding="utf-8")
    entries = c.entries()
    assert set(c.KEYS) == set(entries) and len(c.KEYS) == 14
    for key in c.KEYS:
        assert len(re.findall(r"@\w+\{" + re.escape(key) + ",", text)) == 1, key
        assert len(entries[key].used_for) > 20, key


def test_entries_parse_with_balanced_braces_and_required_fields():
    for key, e in c.entries().items():
        assert e.text.count("{") == e.text.count("}"), key
        depth = 0
        for ch in e.text:  # never closes more than it opened
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, key
        assert {"author", "title", "year"} <= set(e.fields), key
        assert re.fullmatch(r"(19|20)\d\d", e.fields["year"]), key
        assert e.kind in {"article", "inproceedings", "misc", "software"}, key
    assert c.entries()["warstadt2020blimp"].fields["volume"] == "8"


def test_the_parser_catches_broken_entries():
    with pytest.raises(ValueError, match="unbalanced"):
        c.parse("@misc{x,\n  title = {Open {brace},\n  year = {2020}\n")
    assert [e.key for e in c.parse("% Used for: a\n@misc{a, title = {T}, year = 2020}\n@misc{b, title={U}}")] == ["a", "b"]
    assert c.parse("% Used for: the thing\n@misc{a, title = {T}}")[0].used_for == "the thing"


def test_bibtex_text_for_a_list_of_keys():
    out = c.bibtex(["xiang2021climp", "warstadt2020blimp"])
    assert out.index("@inproceedings{xiang2021climp,") < out.index("@article{warstadt2020blimp,")
    assert out.count("% Used for:") == 2
    assert "% Used for" not in c.bibtex(["xiang2021climp"], used_for=False)
    assert [e.key for e in c.parse(c.bibtex())] == list(c.KEYS)
    with pytest.raises(KeyError, match="nosuch"):
        c.bibtex(["nosuch"])


def test_no_unverified_identifiers():
    """DOIs and pages only where a paper in the project's set prints them or its ACL Anthology page gives
    them (see the .bib header)."""
    doi = {k: e.fields.get("doi") for k, e in c.entries().items() if "doi" in e.fields}
    assert doi == {"hu2023prompting": "10.18653/v1/2023.emnlp-main.306", "warstadt2020blimp": "10.1162/tacl_a_00321",
                   "ide2025llmacceptability": "10.18653/v1/2025.naacl-long.380",
                   "kauf2023better": "10.18653/v1/2023.acl-short.80",
                   # both printed in Hu et al. 2025's references
                   "sprouse2013li": "10.1016/j.lingua.2013.07.002", "tjuatja2025morcela": "10.18653/v1/2025.naacl-long.109",
                   # the datasets of Hu et al. 2025, each printed in its references
                   "hu2020syntaxgym": "10.18653/v1/2020.acl-main.158", "song2022sling": "10.18653/v1/2022.emnlp-main.305",
                   "warstadt2019cola": "10.1162/tacl_a_00290", "mccoy2025distilling": "10.1038/s41467-025-59957-y"}
    pages = {k: e.fields["pages"] for k, e in c.entries().items() if "pages" in e.fields}
    assert pages == {"hu2023prompting": "5040--5060", "xiang2021climp": "2784--2790",
                     "ide2025llmacceptability": "7416--7432", "kauf2023better": "925--935", "sprouse2013li": "219--248",
                     "tjuatja2025morcela": "2173--2186", "song2022sling": "4606--4634", "hu2020syntaxgym": "1725--1744",
                     "warstadt2019cola": "625--641", "mccoy2025distilling": "4676"}


def test_about_and_the_bibtex_give_the_same_venue_pages_and_doi():
    """The About tab's reference list and the Cite panel's BibTeX agree (issue 34: About had Ide et al.'s
    venue and DOI, the BibTeX did not)."""
    from accapp.ui import about

    refs = dict(about.PAPERS)
    for label, key in (("Ide et al. 2025", "ide2025llmacceptability"), ("Kauf & Ivanova 2023", "kauf2023better")):
        e = c.entries()[key]
        assert e.kind == "inproceedings" and e.fields["booktitle"]
        assert f"doi:{e.fields['doi']}" in refs[label] and e.fields["pages"].replace("--", "–") in refs[label]


def test_versions_and_license_agree():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == accapp.__version__ == c.entries()[c.APP_KEY].fields["version"]
    assert cff["license"] == project["project"]["license"] == c.entries()[c.APP_KEY].fields["license"]
    assert cff["authors"] == [{"name": "Acceptability Explorer contributors"}]
    assert cff["title"] == c.entries()[c.APP_KEY].fields["title"]
    data = project["tool"]["setuptools"]["package-data"]["accapp"]
    assert {"data/gallery.json", "data/citations.bib"} <= set(data)


def test_cff_references_are_the_six_works():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    refs = cff["references"]

    def plain(title):
        return title.replace("{", "").replace("}", "")

    works = [c.entries()[k] for k in c.KEYS[1:]]
    assert [r["title"] for r in refs] == [plain(e.fields["title"]) for e in works]
    for r, e in zip(refs, works):
        assert str(r["year"]) == e.fields["year"]
        assert [a["family-names"] for a in r["authors"]] == [x.split(",")[0].strip() for x in e.fields["author"].split(" and ")]
        assert r.get("doi") == e.fields.get("doi")


def test_cite_panel_builds():
    import gradio as gr

    from accapp.ui import cite

    with gr.Blocks():
        panel = cite.build()
    assert panel.label == "Cite"
    assert all(f"`{k}`" in cite.works_markdown() for k in c.KEYS)


def test_app_entry_says_where_to_get_it():
    """Issue 34 item 10: the @software entry has a URL, or, with none known, a note saying how to get
    it. A URL must be one the project itself publishes (README, CITATION.cff, pyproject): never invented."""
    fields = c.entries()[c.APP_KEY].fields
    published = "".join((ROOT / f).read_text(encoding="utf-8") for f in ("README.md", "CITATION.cff", "pyproject.toml"))
    if "url" in fields:
        assert fields["url"] in published
    else:
        assert "no public url" in fields["note"].lower() and "python app.py" in fields["note"]
    assert "http" not in fields.get("note", "")  # no address invented in the note either
