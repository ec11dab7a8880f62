from mini_letta.cli import main

main()
