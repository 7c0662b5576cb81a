from harness.commands.cli import main

raise SystemExit(main())
