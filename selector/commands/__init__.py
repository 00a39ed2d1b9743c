"""One module a command: each owns its options, its use-case call and its printing, and
selector/cli.py only registers it.  (Commands still defined in cli.py move here one by one.)"""
