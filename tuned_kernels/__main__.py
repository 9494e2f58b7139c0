from tuned_kernels.cli import main

raise SystemExit(main())
