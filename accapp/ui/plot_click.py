"""A click on a point or bar of a plotly figure, sent to Python. gr.Plot has no select event, so a hidden
gr.HTML watches the page for the figures' plotly graphs (Gradio draws them anew on each update), adds one
plotly_click listener to each, and triggers its own "click" event with the clicked point's customdata,
named by `keys` (gr.EventData: evt.<key>, each a string)."""

from __future__ import annotations

import gradio as gr

CLICK_JS = """
const ids = (props.figures || '').split(' ').filter(Boolean);
const keys = (props.keys || '').split(' ').filter(Boolean);
const send = (ev) => {
  const p = ev && ev.points && ev.points[0];
  const d = p && p.customdata;
  if (!d || d.length < keys.length) return;
  const data = {};
  keys.forEach((k, i) => { data[k] = String(d[i]); });
  trigger('click', data);
};
const attach = () => {
  for (const id of ids) {
    const host = document.getElementById(id);
    if (!host) continue;
    host.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      if (!gd._ev || typeof gd.on !== 'function') return;
      if (gd._ev.listeners('plotly_click').indexOf(send) >= 0) return;
      gd.on('plotly_click', send);
      gd.setAttribute(props.marker, '1');
    });
  }
};
attach();
new MutationObserver(attach).observe(document.body, {childList: true, subtree: true});
"""


def click_hook(figure_ids: list[str], keys: list[str], elem_id: str, marker: str) -> gr.HTML:
    """The hidden gr.HTML whose "click" event carries the clicked point's customdata as evt.<key> (strings);
    each graph it listens to gets the attribute `marker` (tests wait for it)."""
    return gr.HTML("", html_template="<span></span>", js_on_load=CLICK_JS, figures=" ".join(figure_ids),
                   keys=" ".join(keys), marker=marker, elem_id=elem_id, visible="hidden", padding=False,
                   apply_default_css=False)
