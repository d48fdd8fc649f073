"""The Gradio web app: one module per tab (probe, explore, score_file, about), built by accapp.ui.app."""
