"""The Probe tab's method lists, whose choices follow the model: a causal LM's methods, or a masked
LM's. A request sent while the page still shows the lists of the model before (a pick fires
its event twice, the second with the values from before the first answer; Compare pressed at once)
carries method ids that are no longer among the choices. Gradio refuses such a request outright
("Value: 'lp' ... is not in the list of choices", a traceback in the log); these inputs leave the
stale ids out instead, and the probe falls back to the model's own methods
(accapp.methods.ids_for, runnable_only), the benchmark box to its headline method.

Only ids that are not among the choices are left out: anything else is checked as Gradio checks it.
"""

from __future__ import annotations

import gradio as gr


def _among(value, choices) -> bool:
    return any(value == v for _, v in choices)  # == rather than a set: a hostile value may be unhashable


class MethodBoxes(gr.CheckboxGroup):
    """A CheckboxGroup of method ids; checked ids that are not among its choices now are left out."""

    is_template = True  # drawn by Gradio's own CheckboxGroup in the page

    def preprocess(self, payload):
        if isinstance(payload, list):
            payload = [v for v in payload if _among(v, self.choices)]
        return super().preprocess(payload)


class MethodPick(gr.Dropdown):
    """A Dropdown of method ids; an id that is not among its choices now reads as none (None)."""

    is_template = True  # drawn by Gradio's own Dropdown in the page

    def preprocess(self, payload):
        if isinstance(payload, (str, int, float)) and not _among(payload, self.choices):
            payload = None
        return super().preprocess(payload)
