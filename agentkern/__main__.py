from agentkern.cli import main

main()
