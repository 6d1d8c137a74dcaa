import FoundationEssentials
import Glibc

// guard-play: one program, several subcommands. Everything here only dispatches; each command lives in
// its own file and throws `CLIError` for a one-line message and a distinct exit code.
exit(GuardPlay.main(Array(CommandLine.arguments.dropFirst())))
