from perf_selector.selector.cli import main

main()
