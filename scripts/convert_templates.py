"""Convert the papers' prompt templates from ../shared/data into the data files the app ships.

Reads ../shared (a one-off conversion script, never run by the app):
  python scripts/convert_templates.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "templates_ide2025"
OUT = ROOT / "accapp" / "prompts" / "data"

IDE_SOURCE = (
    "Ide et al. 2025, How to Make the Most of LLMs' Grammatical Knowledge for Acceptability "
    "Judgments, NAACL 2025 (doi:10.18653/v1/2025.naacl-long.380); templates from the paper's "
    "experimental materials (github.com/Yusuke196/llm-acceptability)."
)
LANG_OF = {"blimp": "en", "climp": "zh"}


def ll_templates(kind: str) -> dict:
    out = {}
    for bench, lang in LANG_OF.items():
        out[lang] = [
            {"id": str(i), "text": (SHARED / "templates_ll" / f"template_{bench}_{kind}_{i}.txt").read_text(encoding="utf-8")}
            for i in range(1, 6)
        ]
    return out


def prompt_templates(kind: str, bench: str) -> dict:
    out = {}
    for style, suffix in (("base", ""), ("chat", "-chat")):
        rows = []
        for i in range(1, 6):
            data = json.loads((SHARED / "prompts" / bench / f"template_{bench}_{kind}{suffix}_{i}.json").read_text(encoding="utf-8"))
            rows.append({"id": str(i), "system": data["system_prompt"], "user": data["user_template"]})
        out[style] = rows
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    ide = {
        "source": IDE_SOURCE,
        "notes": (
            "Base models: system and user message joined by a space (English) or nothing (Chinese), "
            "as in the paper's code; the base user templates already end in '\\nAnswer: ' / '\\n答案：'. "
            "Instruct models: system + user messages through the model's chat template."
        ),
        "joiner": {"en": " ", "zh": ""},
        "in_template_single": ll_templates("single"),
        "in_template_comparative": ll_templates("compar"),
        "ab": {"en": prompt_templates("ab", "blimp"), "zh": prompt_templates("ab", "climp")},
        "yes_no": {
            "en": prompt_templates("yn", "blimp"),
            "zh": prompt_templates("yn", "climp"),
            "zh_answer_yes_no": prompt_templates("yn-en", "climp"),
        },
        "answers": {
            "ab": ["A", "B"],
            "yes_no": {"en": ["Yes", "No"], "zh": ["是", "否"], "zh_answer_yes_no": ["Yes", "No"]},
        },
    }
    (OUT / "ide2025.json").write_text(json.dumps(ide, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
