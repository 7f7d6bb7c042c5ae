from diffzoo.cli import main

main()
