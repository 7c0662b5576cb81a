import gc

from harness.commands.cli import main

code = main()
# The process ends here, and its memory with it. Without this, the interpreter's last collections walk
# every object it holds (about 280,000 once dbt and Spark's client are loaded): 0.45 s of a cron tick
# that opened Spark, after its work was done (docs/performance-notes.md). Exit handlers still run.
gc.freeze()
raise SystemExit(code)
