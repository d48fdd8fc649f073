"""About tab: every method's formula and source, the templates, the models' licenses, the citations."""

from __future__ import annotations

import html

import gradio as gr

from accapp.benchmarks import ASSETS, BUILTIN
from accapp.prompts import template_set
from accapp.service.catalog import describe, descriptors, headline, registry
from accapp.ui.common import intro

PAPERS = [
    ("Ide et al. 2025", "Yusuke Ide, Yuto Nishida, Justin Vasselli, Miyu Oba, Yusuke Sakai, Hidetaka Kamigaito, Taro "
     "Watanabe. 2025. *How to Make the Most of LLMs' Grammatical Knowledge for Acceptability Judgments.* NAACL 2025, "
     "pp. 7416–7432. doi:10.18653/v1/2025.naacl-long.380"),
    ("Hu & Levy 2023", "Jennifer Hu, Roger Levy. 2023. *Prompting is not a substitute for probability measurements in "
     "large language models.* EMNLP 2023."),
    ("Hu et al. 2025", "Jennifer Hu, Ethan Gottlieb Wilcox, Siyuan Song, Kyle Mahowald, Roger P. Levy. 2025. *What Can "
     "String Probability Tell Us About Grammaticality?*"),
    ("Kauf & Ivanova 2023", "Carina Kauf, Anna A. Ivanova. 2023. *A Better Way to Do Masked Language Model Scoring.* "
     "ACL 2023 (short papers), pp. 925–935. doi:10.18653/v1/2023.acl-short.80"),
]


def md(text) -> str:
    """Text for a Markdown table cell: HTML and Markdown specials escaped, newlines shown as ⏎.

    Not common.esc: quotes stay as they are, because their entities (&#x27;) hold a '#' that
    the Markdown escaping below would break into visible text."""
    s = html.escape("" if text is None else str(text), quote=False)
    for ch in "\\`*_{}[]<>()#+!|~":
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ⏎ ")


SCORING_RULES = """### Ties, conventions, answer tokens
- **Ties.** Two accuracies. The papers' (BLiMP, Ide et al. 2025, Kauf & Ivanova 2023), shown beside
  their numbers: a pair is right when score(good) > score(bad). The project's, beside it where it
  differs: scores closer than the method's **tie tolerance** are a **tie**, counted wrong and shown.
  A method's tolerance follows from how its score is computed: a constant times the size of the
  terms it is a sum or difference of (LP: |LP|; a Bayes factor: its LP and unigram LP; Yes/No: an
  absolute one), the constant 8 times the largest drift measured for it when the same pairs are
  scored alone and in one batch (float32 noise; docs/ties.md has the table). So a verdict depends on
  what else was scored beside the pair only when the pair sits right at the tolerance's edge. The
  same rules hold in the probe, the benchmark runs, Explore and file scoring. A pair whose two
  sentences are identical is no pair: flagged, and left out of both accuracies. Overall accuracy is
  the mean over paradigms; a phenomenon's accuracy is the mean over its pairs.
- **Answer tokens** (Ide et al.'s prompts). The prompt is fed exactly as the authors' code builds
  it (base models: system + space + user text ending in "Answer: "), and the answer read is the
  vocabulary's own "Yes"/"No"/"A"/"B" token, as their code reads it.
- **Yes/No probability.** The softmax of Ide et al.'s eq. 5, P(Yes) / (P(Yes) + P(No)). Their
  released code divides raw logits instead, logit(Yes) / (logit(Yes) + logit(No)), which is not
  a probability (negative logits give values below 0 or above 1, and adding a constant to every
  logit changes it); it is offered only as the labelled convention "authors_raw_logit", to
  reproduce their numbers.
- **Conventions.** Results say which convention computed them. *Project default*: every string is
  scored after the model's start token, so its first word counts. *Authors' code*: a start token
  only where Ide et al.'s code adds one (Llama-3, Mixtral), so otherwise the first token is only
  context; PLL words as the tokenizer splits them (Kauf & Ivanova). Numbers set beside the
  papers' tables should come from the authors' convention.
"""

PROBE_RULES = """### How the Probe tab reaches one answer

- **The headline** is {causal}'s verdict ({masked} for a masked LM): the benchmark standard, with its
  margin in bits or nats; then where the two sentences differ, how much more (or less) surprising
  the unacceptable sentence is there, and apart from it the words after it (the spill-over).
- **One vote per method.** A method with several templates or answer orders is combined by its own
  rule (the column above): a template asked in both answer orders (A/B prompting) votes only when
  both orders pick the same sentence, so a model that always answers "A" casts no vote; then the
  majority of the method's templates, a split being no vote. Ensembles are votes of other
  judgments and are not counted again.
- **Unreliable for this model.** From this project's precomputed run on the benchmark in the
  pair's language (BLiMP for English, CLiMP for Chinese), with one vote per pair as above and a
  pair without a vote counted half right: a method whose accuracy is not above 50 % with 95 %
  confidence (Wilson interval), or that gives one answer to 95 % or more of its prompts, is shown
  with the reason and does not vote. A method with no run votes.
- **Words.** Words are the project's own; Chinese is cut into words by the jieba segmenter (precise
  mode, its default dictionary: 桌子 is one word), and the "characters" view shows one character a
  word (the methods that need words, such as PLL-word-l2r, keep one character a word). A word's surprisal
  is its probability with the leading-space correction of Pimentel & Meister (2024), for
  tokenizers that put the space at the start of a token: the sum of its tokens' log-probabilities,
  plus the log-probability that the next token starts a new word, minus the same before the word.
  The plain sum of the tokens is one switch away.
- **What the model expected instead** (causal LMs): at each word, first where the two sentences
  differ, the most probable tokens that would begin the next word, from the same forward pass
  that scores the sentence (`ACCAPP_TOP_K` of them, 5 unless the server says otherwise), with
  the probability that the next word begins with each (the token's probability divided by the
  probability that a new word begins there, the word rule's own normalisation); the sentence's
  own word as a whole word beside them. Every token's top-k is in the per-token table and the export.
"""


def probe_rules_md() -> str:
    """PROBE_RULES with the headline methods' names (their descriptors')."""
    return PROBE_RULES.replace("{causal}", describe(headline("causal")).name).replace("{masked}", describe(headline("masked")).name)


def methods_md() -> str:
    """Every method's descriptor, one row each, in display order."""
    rows = ["| Method | In plain words | id | Family | Formula | One vote in the probe | Source |",
            "|---|---|---|---|---|---|---|"]
    for d in descriptors().values():
        rows.append(f"| {md(d.name)} | {md(d.plain)} | `{d.id}` | {md(d.family)} | {md(d.formula)} | "
                    f"{md(d.rule)} | {md(d.source)} |")
    return "\n".join(rows)


def templates_md() -> str:
    out = []
    ide = template_set("ide2025")
    out.append("### Ide et al. 2025: the five templates per method\n")
    out.append(f"*Source:* {md(ide['source'])}\n\n{md(ide.get('notes', ''))}\n")
    for key, title in (("in_template_single", "In-template LP / MeanLP / PenLP"),
                       ("in_template_comparative", "In-template comparative LP")):
        for lang, items in ide.get(key, {}).items():
            out.append(f"\n**{title} ({lang})**\n\n| # | template |\n|---|---|")
            out += [f"| {md(t['id'])} | {md(t['text'])} |" for t in items]
    for key, title in (("ab", "A/B prompting"), ("yes_no", "Yes/No prob comp")):
        block = ide.get(key, {})
        for lang, by_variant in block.items():
            if not isinstance(by_variant, dict):
                continue
            for variant, items in by_variant.items():
                if not isinstance(items, list):
                    continue
                kind = "instruct (chat template)" if variant == "chat" else "base"
                out.append(f"\n**{title}, {kind} models ({md(lang)})**\n\n| # | system | user |\n|---|---|---|")
                out += [f"| {md(t.get('id', ''))} | {md(t.get('system', ''))} | {md(t.get('user', t.get('text', '')))} |"
                        for t in items]
    hu = template_set("hu_levy2023")
    out.append("\n### Hu & Levy 2023: metalinguistic prompts\n")
    out.append(f"*Source:* {md(hu['source'])}\n\n{md(hu.get('notes', ''))}\n")
    for key in ("judgment", "comparison"):
        for lang, prompts in hu.get(key, {}).items():
            out.append(f"\n**Sentence {key} ({lang})**\n\n| prompt | user text | base-model suffix |\n|---|---|---|")
            for pid, p in prompts.items():
                out.append(f"| {md(pid)} | {md(p.get('user', ''))} | {md(p.get('base_suffix', ''))} |")
    return "\n".join(out)


def models_md() -> str:
    rows = ["| Model | id | Kind | Languages | Weights | License |", "|---|---|---|---|---|---|"]
    for s in registry().values():
        where = "embedded, works offline" if s.embedded else f"Hugging Face hub: `{s.hub_id}`"
        where += "; needs a GPU (4-bit NF4 there)" if s.needs_gpu else ""
        where += "; gated: the server needs an `HF_TOKEN` with access" if s.gated else ""
        lic = f"[{md(s.license)}]({s.license_url})" if s.license_url else md(s.license)
        rows.append(f"| {md(s.name)} | `{s.id}` | {s.kind} ({s.variant}) | {', '.join(s.languages)} | {where} | {lic} |")
    return "\n".join(rows)


def benchmarks_md() -> str:
    out = [f"- **{b.label}**: {md(b.citation)}" for b in BUILTIN.values()]
    readme = ASSETS / "README.md"
    if readme.is_file():
        out.append("\n<details><summary>How the shipped benchmark files were made</summary>\n\n"
                   + readme.read_text(encoding="utf-8") + "\n</details>")
    return "\n".join(out)


def build() -> None:
    gr.HTML(intro("About the methods, models and data",
                  "What each judgment method computes and where it comes from, the exact templates, the models and "
                  "their licenses, and the papers and benchmarks to cite."))
    gr.Markdown("## Papers\n\n" + "\n".join(f"- **{k}.** {v}" for k, v in PAPERS), elem_id="about-papers")
    with gr.Accordion("Judgment methods: formula and source", open=True):
        gr.Markdown(methods_md(), elem_id="about-methods")
        gr.Markdown(SCORING_RULES, elem_id="about-scoring-rules")
        gr.Markdown(probe_rules_md(), elem_id="about-probe-rules")
    with gr.Accordion("Templates and prompts", open=False):
        gr.Markdown(templates_md(), elem_id="about-templates")
    with gr.Accordion("Models and licenses", open=True):
        gr.Markdown(models_md(), elem_id="about-models")
    with gr.Accordion("Benchmarks", open=True):
        gr.Markdown(benchmarks_md(), elem_id="about-benchmarks")
