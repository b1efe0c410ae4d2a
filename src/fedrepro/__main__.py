from fedrepro.cli import main

raise SystemExit(main())
