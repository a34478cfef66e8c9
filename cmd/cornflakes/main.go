// Command cornflakes is the one command-line entry point of Cornflakes for Go:
// code generation, the benchmarks the papers run, and the servers they measure.
//
// Each subcommand lives in its own file (cmd_<name>.go) and registers itself
// in init with register, so that subcommands can be added without touching
// this file.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand of the cornflakes CLI.
type command struct {
	name    string // first word on the command line, e.g. "microbench"
	summary string // one line for the usage listing
	// run executes the subcommand with the arguments that follow its name.
	// It writes results to stdout and progress or diagnostics to stderr.
	run func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

// register adds a subcommand; it is called from init functions.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("cornflakes: duplicate subcommand " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cornflakes <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'cornflakes <command> -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cornflakes: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(args[1:], stdout, stderr); err != nil {
		if err == errUsage {
			return 2
		}
		if err == errNotFound { // already reported, as redis-cli prints (nil)
			return 1
		}
		fmt.Fprintf(stderr, "cornflakes %s: %s\n", c.name, strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

// errUsage is returned by a subcommand whose flags did not parse; the flag
// package has already printed the problem.
var errUsage = fmt.Errorf("usage")
