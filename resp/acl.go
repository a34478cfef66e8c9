package resp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"sync"
)

// ACL users, as Redis 7.0's root selector: on/off, password hashes or
// nopass, key patterns, channel patterns (stored and shown; there is no
// pub/sub) and a bitmap of the commands a user may run. A connection holds
// its *user; the user's rules are an immutable *aclRules swapped
// atomically by ACL SETUSER, so a command's check is one atomic load and a
// bit test, and changes apply to connections already authenticated.

// aclCategoryNames are Redis 7.0's ACL categories in its order (ACL CAT).
var aclCategoryNames = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

// aclEntry is one thing a rule can allow: a command of the table, or an
// ACL subcommand (acl|setuser, ...), as Redis's ACL bitmap.
type aclEntry struct {
	name string
	cats uint32 // bit i: aclCategoryNames[i]
}

// aclSubcommands are the ACL subcommands, each its own ACL entry as in
// Redis (acl|whoami and acl|cat are not admin).
var aclSubcommands = []struct {
	name  string
	admin bool
}{{"cat", false}, {"deluser", true}, {"getuser", true}, {"list", true}, {"setuser", true}, {"users", true}, {"whoami", false}}

const aclMaxEntries = 256

// aclBits is a set of ACL entries.
type aclBits [aclMaxEntries / 64]uint64

func (b *aclBits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b *aclBits) set(i int, on bool) {
	if on {
		b[i/64] |= 1 << (i % 64)
	} else {
		b[i/64] &^= 1 << (i % 64)
	}
}

var (
	aclOnce    sync.Once
	aclEntries []aclEntry
	aclIndex   map[string]int // entry name → index
)

// aclTable builds the ACL entries from the command table (after every
// init has registered its commands).
func aclTable() {
	aclOnce.Do(func() {
		aclIndex = map[string]int{}
		cat := func(names ...string) uint32 {
			var m uint32
			for _, n := range names {
				n = strings.TrimPrefix(n, "@")
				for i, c := range aclCategoryNames {
					if c == n {
						m |= 1 << i
					}
				}
			}
			return m
		}
		add := func(name string, cats uint32) {
			aclIndex[name] = len(aclEntries)
			aclEntries = append(aclEntries, aclEntry{name, cats})
		}
		for _, n := range commandNames {
			c := commands[n]
			if n == "acl" { // a container: its subcommands are the entries
				c.aclID = -1
				for _, s := range aclSubcommands {
					if s.admin {
						add("acl|"+s.name, cat("admin", "dangerous", "slow"))
					} else {
						add("acl|"+s.name, cat("slow"))
					}
				}
				continue
			}
			c.aclID = len(aclEntries)
			add(n, cat(aclCategories(c)...))
		}
		if len(aclEntries) > aclMaxEntries {
			panic("resp: more commands than aclMaxEntries")
		}
	})
}

func aclCategory(name string) (uint32, bool) {
	for i, c := range aclCategoryNames {
		if strings.EqualFold(c, name) {
			return 1 << i, true
		}
	}
	return 0, false
}

// aclRules is a user's state; never changed once published (copy, then
// change, then store).
type aclRules struct {
	enabled, nopass bool
	// sanitize: 0 neither flag, 1 sanitize-payload, 2 skip-sanitize-payload
	// (shown, no effect here).
	sanitize    int
	passwords   []string // SHA-256 hex, in the order added
	allKeys     bool
	keys        []string
	allChannels bool
	channels    []string
	allCmds     bool // +@all: Redis's "future commands" bit, decides how rules are described
	cmds        aclBits
	deleted     bool // ACL DELUSER: connections of the user close at their next command
}

func (r *aclRules) clone() *aclRules {
	c := *r
	c.passwords = append([]string(nil), r.passwords...)
	c.keys = append([]string(nil), r.keys...)
	c.channels = append([]string(nil), r.channels...)
	return &c
}

func hashPassword(p []byte) string {
	h := sha256.Sum256(p)
	return hex.EncodeToString(h[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// aclErr is why a SETUSER modifier was refused, in Redis's words.
type aclErr string

const (
	aclErrUnknown aclErr = "Unknown command or category name in ACL"
	aclErrSyntax  aclErr = "Syntax error"
	aclErrKeyAll  aclErr = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	aclErrChanAll aclErr = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	aclErrNoPass  aclErr = "The password you are trying to remove from the user does not exist"
	aclErrBadHash aclErr = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	aclOK         aclErr = ""
)

func (r *aclRules) setCommands(cats uint32, on bool) {
	for i, e := range aclEntries {
		if e.cats&cats != 0 {
			r.cmds.set(i, on)
		}
	}
}

func (r *aclRules) setAll(on bool) {
	for i := range aclEntries {
		r.cmds.set(i, on)
	}
	r.allCmds = on
}

// apply changes r by one SETUSER modifier (Redis's ACLSetUser).
func (r *aclRules) apply(op string) aclErr {
	if op == "" {
		return aclOK
	}
	switch strings.ToLower(op) {
	case "on":
		r.enabled = true
	case "off":
		r.enabled = false
	case "skip-sanitize-payload":
		r.sanitize = 2
	case "sanitize-payload":
		r.sanitize = 1
	case "nopass":
		r.nopass, r.passwords = true, nil
	case "resetpass":
		r.nopass, r.passwords = false, nil
	case "reset":
		*r = aclRules{sanitize: 1}
	case "clearselectors": // there are no selectors besides the root
	case "allkeys", "~*":
		r.allKeys, r.keys = true, nil
	case "resetkeys":
		r.allKeys, r.keys = false, nil
	case "allchannels", "&*":
		r.allChannels, r.channels = true, nil
	case "resetchannels":
		r.allChannels, r.channels = false, nil
	case "allcommands", "+@all":
		r.setAll(true)
	case "nocommands", "-@all":
		r.setAll(false)
	default:
		return r.applyPrefixed(op)
	}
	return aclOK
}

func (r *aclRules) applyPrefixed(op string) aclErr {
	arg := op[1:]
	switch op[0] {
	case '>', '#':
		h := arg
		if op[0] == '>' {
			h = hashPassword([]byte(arg))
		} else if !validHash(h) {
			return aclErrBadHash
		}
		if !contains(r.passwords, h) {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
	case '<', '!':
		h := arg
		if op[0] == '<' {
			h = hashPassword([]byte(arg))
		} else if !validHash(h) {
			return aclErrBadHash
		}
		i := index(r.passwords, h)
		if i < 0 {
			return aclErrNoPass
		}
		r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
	case '~':
		if r.allKeys {
			return aclErrKeyAll
		}
		if hasSpaces(arg) {
			return aclErrSyntax
		}
		if !contains(r.keys, arg) {
			r.keys = append(r.keys, arg)
		}
	case '&':
		if r.allChannels {
			return aclErrChanAll
		}
		if hasSpaces(arg) {
			return aclErrSyntax
		}
		if !contains(r.channels, arg) {
			r.channels = append(r.channels, arg)
		}
	case '+', '-':
		on := op[0] == '+'
		if strings.HasPrefix(arg, "@") {
			m, ok := aclCategory(arg[1:])
			if !ok {
				return aclErrUnknown
			}
			r.setCommands(m, on)
			return aclOK
		}
		i, ok := aclIndex[strings.ToLower(arg)]
		if !ok {
			return aclErrUnknown
		}
		r.cmds.set(i, on)
	default: // %R~ / %W~ key patterns and (selectors) are not implemented
		return aclErrSyntax
	}
	return aclOK
}

func index(s []string, x string) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

func contains(s []string, x string) bool { return index(s, x) >= 0 }

// describeCommands is Redis 7.0's ACLDescribeSelectorCommandRules over
// this server's entries: +@all or -@all, then the category that fits
// best while one fits more than it misses, then single commands.
func (r *aclRules) describeCommands() string {
	var sb strings.Builder
	additive := !r.allCmds
	var fake aclRules
	if additive {
		sb.WriteString("-@all")
	} else {
		sb.WriteString("+@all")
		fake.setAll(true)
	}
	temp := r.cmds
	applied := make([]bool, len(aclCategoryNames))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range aclCategoryNames {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for i, e := range aclEntries {
				if e.cats&(1<<j) == 0 {
					continue
				}
				if temp.has(i) {
					on++
				} else {
					off++
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || (diff == minDiff && same > maxSame)) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		sign := "-@"
		if additive {
			sign = "+@"
		}
		sb.WriteString(" " + sign + aclCategoryNames[best])
		for i, e := range aclEntries {
			if e.cats&(1<<best) != 0 {
				fake.cmds.set(i, additive)
				temp.set(i, !additive)
			}
		}
		applied[best] = true
	}
	for i, e := range aclEntries {
		if u := r.cmds.has(i); u != fake.cmds.has(i) {
			if u {
				sb.WriteString(" +" + e.name)
			} else {
				sb.WriteString(" -" + e.name)
			}
		}
	}
	return sb.String()
}

func (r *aclRules) flags() []string {
	f := []string{"off"}
	if r.enabled {
		f[0] = "on"
	}
	if r.nopass {
		f = append(f, "nopass")
	}
	switch r.sanitize {
	case 1:
		f = append(f, "sanitize-payload")
	case 2:
		f = append(f, "skip-sanitize-payload")
	}
	return f
}

func (r *aclRules) keysString() string {
	if r.allKeys {
		return "~*"
	}
	s := make([]string, len(r.keys))
	for i, k := range r.keys {
		s[i] = "~" + k
	}
	return strings.Join(s, " ")
}

func (r *aclRules) channelsString() string {
	if r.allChannels {
		return "&*"
	}
	s := make([]string, len(r.channels))
	for i, k := range r.channels {
		s[i] = "&" + k
	}
	return strings.Join(s, " ")
}

// describe is the user's ACL LIST line after "user <name> ".
func (r *aclRules) describe() string {
	var sb strings.Builder
	for _, f := range r.flags() {
		sb.WriteString(f + " ")
	}
	for _, p := range r.passwords {
		sb.WriteString("#" + p + " ")
	}
	if k := r.keysString(); k != "" {
		sb.WriteString(k + " ")
	}
	if !r.allChannels {
		sb.WriteString("resetchannels ")
	}
	if c := r.channelsString(); c != "" {
		sb.WriteString(c + " ")
	}
	sb.WriteString(r.describeCommands())
	return sb.String()
}

// canRun reports whether the rules allow the ACL entry i.
func (r *aclRules) canRun(i int) bool { return r.cmds.has(i) }

// keysAllowed reports whether every key argument of c in args matches a
// key pattern.
func (r *aclRules) keysAllowed(c *command, args [][]byte) bool {
	if r.allKeys || c.first <= 0 {
		return true
	}
	last := c.last
	if last < 0 {
		last = len(args) + last
	}
	for i := c.first; i <= last && i < len(args); i += max(c.step, 1) {
		ok := false
		for _, p := range r.keys {
			if globMatch([]byte(p), args[i]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkPassword reports whether pass is one of the rules' passwords (or
// the user is nopass), comparing hashes in constant time.
func (r *aclRules) checkPassword(pass []byte) bool {
	if r.nopass {
		return true
	}
	h := hashPassword(pass)
	ok := 0
	for _, p := range r.passwords {
		ok |= subtle.ConstantTimeCompare([]byte(p), []byte(h))
	}
	return ok == 1
}

// rulesOf turns a configured User into rules: full users "+@all", read-only
// ones every command without the write or admin flag.
func rulesOf(u User, defaultUser bool) *aclRules {
	aclTable()
	r := &aclRules{enabled: true, allKeys: true, allChannels: true}
	if defaultUser && u.Password == "" {
		r.nopass = true
	} else {
		r.passwords = []string{hashPassword([]byte(u.Password))}
	}
	if !u.ReadOnly {
		r.setAll(true)
		return r
	}
	for _, n := range commandNames {
		c := commands[n]
		if n == "acl" {
			r.cmds.set(aclIndex["acl|whoami"], true)
			r.cmds.set(aclIndex["acl|cat"], true)
			continue
		}
		r.cmds.set(c.aclID, c.flags&(fWrite|fAdmin) == 0)
	}
	return r
}
