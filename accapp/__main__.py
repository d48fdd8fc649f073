from accapp.cli import main

raise SystemExit(main())
