package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// kvClientOps maps the client subcommands of `cornflakes kv` to requests.
var kvClientOps = map[string]workload.Op{
	"get":     workload.OpGet,
	"put":     workload.OpPut,
	"del":     workload.OpDelete,
	"getlist": workload.OpGetList,
	"append":  workload.OpAppendToList,
}

// errNotFound makes `kv get` exit with status 1 when a key is missing.
var errNotFound = errors.New("not found")

// runKVClient sends one request to a running server (`cornflakes kv
// serve`) and prints the values of the response, one per line.
func runKVClient(name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kv "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "the server's address, host:port (what kv serve prints); required")
	local := fs.String("local", "127.0.0.1", "IP this client binds (an address the server can reach)")
	ser := fs.String("serializer", "cornflakes", "serializer of the request: cornflakes[/hybrid|/copy|/zerocopy], protobuf, vtprotobuf, flatbuffers, capnp")
	endpoints := fs.Int("endpoints", 1, "the server's endpoints (keys are sharded across them)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	credFile := fs.String("credentials", "", "authenticate with a credential of this file (kv serve --credentials format)")
	user := fs.String("user", "", "the credential's name in --credentials (default: the file's only one)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	op := kvClientOps[name]
	keys, vals, err := kvClientArgs(op, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "kv %s: %v\n%s\n", name, err, kvUsage)
		return errUsage
	}
	addr, ip, err := parseServerFlags("kv "+name, *server, *local, stderr)
	if err != nil {
		return err
	}
	if !addr.IsValid() {
		fmt.Fprintf(stderr, "kv %s: --server is required\n", name)
		return errUsage
	}
	serName, mode, _ := strings.Cut(*ser, "/")
	codec, err := kv.LookupCodec(serName, mode, true)
	if err != nil {
		return err
	}
	if op == workload.OpGet && len(keys) > 1 {
		op = workload.OpGetM
	}
	ccfg := kv.ClientConfig{Server: addr, Endpoints: *endpoints, Local: ip, ConnectTimeout: *timeout}
	if *credFile != "" {
		keys, err := readCredentials(*credFile)
		if err != nil {
			return fmt.Errorf("kv %s: %w", name, err)
		}
		if ccfg.Nexus.Credential, err = kv.Credential(keys, *user); err != nil {
			return fmt.Errorf("kv %s: %w", name, err)
		}
	}
	cl, err := kv.NewClient(ccfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	conn, err := cl.Dial(codec)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := &workload.Request{Op: op, Keys: keys, Values: vals}
	if err := conn.Send(1, req); err != nil {
		return err
	}
	var status workload.Status
	done := false
	deadline := time.Now().Add(*timeout)
	for !done && time.Now().Before(deadline) {
		if _, err := conn.Poll(func(_ uint64, resp *workload.Response) {
			done, status = true, resp.Status
			for _, v := range resp.Values { // borrowed until the callback returns
				fmt.Fprintf(stdout, "%s\n", v)
			}
		}); err != nil {
			return err
		}
		if !done {
			_ = conn.Wait(10 * time.Millisecond)
		}
	}
	switch {
	case !done:
		return fmt.Errorf("kv %s: no response from %v within %v", name, addr, *timeout)
	case status == workload.StatusNotFound:
		fmt.Fprintln(stderr, "(not found)")
		return errNotFound
	case status != workload.StatusOK:
		return fmt.Errorf("kv %s: the server answered %v (%v)", name, status, conn.LastError)
	}
	return nil
}

// kvClientArgs splits a client subcommand's arguments into keys and values.
func kvClientArgs(op workload.Op, args []string) (keys, vals [][]byte, err error) {
	want := 1 // del, getlist
	switch op {
	case workload.OpGet:
		if len(args) == 0 {
			return nil, nil, errors.New("want one or more keys")
		}
		want = len(args)
	case workload.OpPut, workload.OpAppendToList:
		want = 2
	}
	if len(args) != want {
		return nil, nil, fmt.Errorf("want %d arguments, got %d", want, len(args))
	}
	switch op {
	case workload.OpPut, workload.OpAppendToList:
		return [][]byte{[]byte(args[0])}, [][]byte{[]byte(args[1])}, nil
	}
	for _, a := range args {
		keys = append(keys, []byte(a))
	}
	return keys, nil, nil
}

// parseServerFlags parses the --server (ip:port) and --local (IP) flags of
// a command that talks to a running server; an empty flag gives the zero
// value. A malformed one is reported on stderr as errUsage.
func parseServerFlags(cmd, server, local string, stderr io.Writer) (netip.AddrPort, netip.Addr, error) {
	var ap netip.AddrPort
	var ip netip.Addr
	var err error
	if server != "" {
		if ap, err = netip.ParseAddrPort(server); err != nil {
			fmt.Fprintf(stderr, "%s: --server %q: want ip:port (%v)\n", cmd, server, err)
			return ap, ip, errUsage
		}
	}
	if local != "" {
		if ip, err = netip.ParseAddr(local); err != nil {
			fmt.Fprintf(stderr, "%s: --local %q: want an IP (%v)\n", cmd, local, err)
			return ap, ip, errUsage
		}
	}
	return ap, ip, nil
}
