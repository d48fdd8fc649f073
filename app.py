"""Acceptability Explorer: `python app.py` starts the web app (see accapp/ui/app.py)."""

from accapp.ui.app import main

if __name__ == "__main__":
    main()
