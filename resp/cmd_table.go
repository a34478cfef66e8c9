package resp

import (
	"sort"
	"strings"
)

// Command flags, after Redis's command table.
const (
	fWrite    = 1 << iota // changes data (touches WATCHed keys; refused to read-only users)
	fRead                 // reads data
	fDenyOOM              // may grow memory: refused over maxmemory (noeviction)
	fNoLock               // connection state only: runs without the keyspace lock
	fNoAuth               // allowed before authentication
	fNoMulti              // executed at once inside MULTI instead of queued
	fAdmin                // server administration (refused to read-only users)
	fFast                 // O(1) or O(log n)
	fBlocking             // may block the client
	// fTouches: the command marks the WATCHed keys it changes itself
	// (conn.touched), as Redis's signalModifiedKey, instead of run marking
	// every key it names: a write that changes nothing (SET NX of a key
	// that exists, DEL of an absent key) does not abort a transaction.
	fTouches
)

// command is one entry of the command table: Redis's arity convention
// (n: exactly n arguments with the name; -n: at least n) and key positions.
type command struct {
	name              string
	arity             int
	flags             int
	first, last, step int
	group             string
	summary           string
	fn                func(cn *conn, args [][]byte)
	aclID             int // its ACL entry (aclTable); -1: checked by the command (ACL)
}

var commands = map[string]*command{}

// commandNames is the table's names in order (COMMAND, COMMAND DOCS).
var commandNames []string

func register(cs ...*command) {
	for _, c := range cs {
		if c.name == "" || len(c.name) > maxCommandName || strings.ToLower(c.name) != c.name {
			panic("resp: command name " + c.name + ": want 1 to 24 bytes, lower case")
		}
		commands[c.name] = c
		commandNames = append(commandNames, c.name)
		i := cmdSlot(c.name)
		cmdSlots[i] = append(cmdSlots[i], c)
	}
	sort.Strings(commandNames)
}

// maxCommandName is the longest command name looked up.
const maxCommandName = 24

// cmdSlots is the table again, hashed by cmdSlot for lookupCommand: a
// few integer operations and one comparison instead of a lowered copy of
// the name, a string hash and a map probe for every command.
var cmdSlots [512][]*command

// cmdSlot hashes a name of 1 to maxCommandName bytes on its length and
// three of its bytes, with the ASCII case bit set (an upper-case letter
// lands where its lower case does; other bytes may share slots, which
// the comparison tells apart).
func cmdSlot[T string | []byte](b T) int {
	n := len(b)
	return (n*131 + int(b[0]|0x20)*31 + int(b[n/2]|0x20)*7 + int(b[n-1]|0x20)) & (len(cmdSlots) - 1)
}

// lookupCommand finds the command named b (any case) without allocating.
func lookupCommand(b []byte) *command {
	if len(b) == 0 || len(b) > maxCommandName {
		return nil
	}
	for _, c := range cmdSlots[cmdSlot(b)] {
		if foldEqual(b, c.name) {
			return c
		}
	}
	return nil
}

// foldEqual reports whether b is the lower-case name in any case (ASCII
// letters only, as Redis's strcasecmp of command names).
func foldEqual(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

func flagNames(f int) []string {
	var s []string
	for _, x := range []struct {
		f    int
		name string
	}{{fWrite, "write"}, {fRead, "readonly"}, {fDenyOOM, "denyoom"}, {fAdmin, "admin"},
		{fNoAuth, "no_auth"}, {fFast, "fast"}, {fBlocking, "blocking"}} {
		if f&x.f != 0 {
			s = append(s, x.name)
		}
	}
	return s
}

func aclCategories(c *command) []string {
	var s []string
	if c.flags&fWrite != 0 {
		s = append(s, "@write")
	}
	if c.flags&fRead != 0 {
		s = append(s, "@read")
	}
	if c.flags&fAdmin != 0 {
		s = append(s, "@admin", "@dangerous")
	}
	if c.flags&fFast != 0 {
		s = append(s, "@fast")
	} else {
		s = append(s, "@slow")
	}
	if c.flags&fBlocking != 0 {
		s = append(s, "@blocking")
	}
	switch c.group { // the command groups that are ACL categories, in Redis's names
	case "generic":
		s = append(s, "@keyspace")
	case "transactions":
		s = append(s, "@transaction")
	case "server":
	default:
		s = append(s, "@"+c.group)
	}
	return append(s, extraCategories[c.name]...)
}

// extraCategories are categories Redis gives commands beyond what their
// flags and group say.
var extraCategories = map[string][]string{
	"dbsize": {"@keyspace"}, "flushall": {"@keyspace", "@dangerous"}, "flushdb": {"@keyspace", "@dangerous"},
	"info": {"@dangerous"}, "keys": {"@dangerous"}, "command": {"@connection"},
}

// commandInfo writes Redis 7's COMMAND INFO reply entry for c.
func (cn *conn) commandInfo(c *command) {
	o := &cn.out
	o.arrayHeader(10)
	o.bulkString(c.name)
	o.int(int64(c.arity))
	fl := flagNames(c.flags)
	o.setHeader(len(fl))
	for _, f := range fl {
		o.simple(f)
	}
	o.int(int64(c.first))
	o.int(int64(c.last))
	o.int(int64(c.step))
	cat := aclCategories(c)
	o.setHeader(len(cat))
	for _, f := range cat {
		o.simple(f)
	}
	o.setHeader(0) // tips
	o.arrayHeader(0)
	o.arrayHeader(0)
}

func cmdCommand(cn *conn, args [][]byte) {
	o := &cn.out
	if len(args) == 1 {
		o.arrayHeader(len(commandNames))
		for _, n := range commandNames {
			cn.commandInfo(commands[n])
		}
		return
	}
	switch strings.ToUpper(string(args[1])) {
	case "COUNT":
		if len(args) != 2 {
			cn.arity("command|count")
			return
		}
		o.int(int64(len(commandNames)))
	case "LIST":
		o.arrayHeader(len(commandNames))
		for _, n := range commandNames {
			o.bulkString(n)
		}
	case "INFO":
		names := commandNames
		if len(args) > 2 {
			names = nil
			for _, a := range args[2:] {
				names = append(names, strings.ToLower(string(a)))
			}
		}
		o.arrayHeader(len(names))
		for _, n := range names {
			if c := commands[n]; c != nil {
				cn.commandInfo(c)
			} else {
				o.nullArray()
			}
		}
	case "DOCS":
		names := commandNames
		if len(args) > 2 {
			names = nil
			for _, a := range args[2:] {
				if c := commands[strings.ToLower(string(a))]; c != nil {
					names = append(names, c.name)
				}
			}
		}
		o.mapHeader(len(names))
		for _, n := range names {
			c := commands[n]
			o.bulkString(n)
			o.mapHeader(3)
			o.bulkString("summary")
			o.bulkString(c.summary)
			o.bulkString("since")
			o.bulkString("1.0.0")
			o.bulkString("group")
			o.bulkString(c.group)
		}
	default:
		cn.fail("unknown subcommand '" + sanitize(args[1]) + "'. Try COMMAND HELP.")
	}
}
