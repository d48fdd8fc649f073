"""The "Cite" panel: BibTeX for Acceptability Explorer and for every paper and benchmark behind
what the app shows, ready to copy. The entries are data (:mod:`accapp.service.citations`)."""

from __future__ import annotations

import gradio as gr

from accapp.service.citations import KEYS, bibtex, entries

LEAD = ("If you use Acceptability Explorer in research or teaching, please cite the app and the works whose "
        "methods, prompts and benchmarks it shows. The line above each entry says what it is used for here. "
        "`CITATION.cff` at the project root says the same for citation tools.")


def works_markdown() -> str:
    """One line per work: its key and what the app uses it for."""
    known = entries()
    return "\n".join(f"- `{k}`: {known[k].used_for}" for k in KEYS)


def build() -> gr.Accordion:
    with gr.Accordion("Cite", open=False, elem_id="cite") as panel:
        gr.Markdown(LEAD + "\n\n" + works_markdown(), elem_id="cite-works")
        gr.Code(bibtex(), language=None, interactive=False, label="BibTeX", lines=12, max_lines=40, wrap_lines=True,
                show_line_numbers=False, buttons=["copy"], elem_id="cite-bibtex")
    return panel
