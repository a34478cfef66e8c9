// Package netns creates and removes pairs of Linux network namespaces joined
// by a veth pair, for tests (and, later, `cornflakes netns up|down`) that
// need real traffic across a real link without touching the host's
// interfaces.
//
// Both ends of the veth live in namespaces the package creates; nothing is
// added to the namespace the process runs in. Names carry a prefix and the
// creating process id so that concurrent runs and leftovers are easy to tell
// apart (Cleanup removes leftovers of dead processes).
//
// Sockets opened inside Do stay bound to that namespace after Do returns,
// so a test opens its endpoints in Do and then uses them from any goroutine.
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// DefaultPrefix starts the name of every namespace this package creates.
const DefaultPrefix = "cfns"

// ErrUnavailable is wrapped by errors reporting that namespaces cannot be
// created here (not root, or no `ip` command).
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// Config describes a pair to create. The zero value is usable.
type Config struct {
	// Prefix starts the namespace names (default DefaultPrefix). The full
	// name is Prefix-<pid>-<n>-a / -b.
	Prefix string
	// Name, if set, replaces the generated base name: the namespaces are
	// Name-a and Name-b (for pairs that outlive the process, e.g. a
	// `netns up` command; remove them with Remove(Name)).
	Name string
	// MTU of both veth ends (default 1500).
	MTU int
	// Net4 is the IPv4 /24 of the link (default 10.99.0.0/24): side A gets
	// .1 and side B gets .2.
	Net4 netip.Prefix
	// Net6 is the IPv6 /64 of the link (default fd99:cf::/64): A gets ::1,
	// B gets ::2. Addresses are added with nodad so they are usable at once.
	Net6 netip.Prefix
}

// End is one side of a pair: a namespace, its veth interface and addresses.
type End struct {
	NS    string     // namespace name (as in `ip netns list`)
	If    string     // veth interface inside NS
	Addr4 netip.Addr // IPv4 address of If
	Addr6 netip.Addr // IPv6 address of If
}

// Pair is two namespaces joined by a veth pair.
type Pair struct {
	A, B   End
	MTU    int
	closed bool
}

var seq atomic.Uint32

// Available reports nil when namespaces can be created: the process is
// root and the `ip` command exists. Otherwise the error says why.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not running as root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat("/proc/thread-self/ns/net"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Create makes the two namespaces, the veth pair between them, brings the
// links (and loopback) up and assigns addresses. On error everything created
// so far is removed.
func Create(cfg Config) (*Pair, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "/ \t\n") {
		return nil, fmt.Errorf("netns: bad prefix %q", cfg.Prefix)
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if !cfg.Net4.IsValid() {
		cfg.Net4 = netip.MustParsePrefix("10.99.0.0/24")
	}
	if !cfg.Net6.IsValid() {
		cfg.Net6 = netip.MustParsePrefix("fd99:cf::/64")
	}
	if !cfg.Net4.Addr().Is4() || !cfg.Net6.Addr().Is6() || cfg.Net4.Bits() > 30 || cfg.Net6.Bits() > 126 {
		return nil, fmt.Errorf("netns: bad networks %v %v", cfg.Net4, cfg.Net6)
	}
	base := fmt.Sprintf("%s-%d-%d", cfg.Prefix, os.Getpid(), seq.Add(1))
	if cfg.Name != "" {
		if !validName(cfg.Name) {
			return nil, fmt.Errorf("netns: bad name %q", cfg.Name)
		}
		base = cfg.Name
		for _, ns := range []string{base + "-a", base + "-b"} {
			if _, err := os.Stat("/run/netns/" + ns); err == nil {
				return nil, fmt.Errorf("netns: namespace %s already exists", ns)
			}
		}
	}
	a4, b4 := cfg.Net4.Masked().Addr().Next(), cfg.Net4.Masked().Addr().Next().Next()
	a6, b6 := cfg.Net6.Masked().Addr().Next(), cfg.Net6.Masked().Addr().Next().Next()
	p := &Pair{
		A:   End{NS: base + "-a", If: "cfveth0", Addr4: a4, Addr6: a6},
		B:   End{NS: base + "-b", If: "cfveth1", Addr4: b4, Addr6: b6},
		MTU: cfg.MTU,
	}
	mtu := strconv.Itoa(cfg.MTU)
	steps := [][]string{
		{"netns", "add", p.A.NS},
		{"netns", "add", p.B.NS},
		{"-n", p.A.NS, "link", "add", p.A.If, "mtu", mtu, "type", "veth", "peer", "name", p.B.If, "mtu", mtu, "netns", p.B.NS},
	}
	for _, e := range []End{p.A, p.B} {
		steps = append(steps,
			[]string{"-n", e.NS, "link", "set", "lo", "up"},
			[]string{"-n", e.NS, "addr", "add", netip.PrefixFrom(e.Addr4, cfg.Net4.Bits()).String(), "dev", e.If},
			[]string{"-n", e.NS, "-6", "addr", "add", netip.PrefixFrom(e.Addr6, cfg.Net6.Bits()).String(), "dev", e.If, "nodad"},
			[]string{"-n", e.NS, "link", "set", e.If, "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Close deletes both namespaces (which deletes the veth pair). It is safe to
// call more than once.
func (p *Pair) Close() error {
	if p == nil || p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, ns := range []string{p.A.NS, p.B.NS} {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ForTest creates a pair for a test and removes it in t.Cleanup. It skips
// the test, with the reason, when namespaces are unavailable.
func ForTest(t testing.TB, cfg Config) *Pair {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	p, err := Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("netns cleanup: %v", err)
		}
	})
	return p
}

// Do runs fn on a fresh OS thread that has joined namespace ns, then
// discards that thread. Sockets created by fn remain in ns.
func Do(ns string, fn func() error) error {
	if strings.ContainsAny(ns, "/") || ns == "" {
		return fmt.Errorf("netns: bad namespace name %q", ns)
	}
	done := make(chan error, 1)
	go func() {
		// The thread is never unlocked: when the goroutine exits, the
		// runtime terminates the thread instead of reusing it in ns.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- fmt.Errorf("netns: %w", err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			done <- fmt.Errorf("netns: setns %s: %w", ns, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// Leftovers lists namespaces with prefix whose creating process no longer
// exists (left by a killed run).
func Leftovers(prefix string) ([]string, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		if pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Cleanup deletes the namespaces Leftovers reports.
func Cleanup(prefix string) error {
	names, err := Leftovers(prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := ip("netns", "del", n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validName accepts names usable as namespace names (and in paths).
func validName(n string) bool {
	if n == "" || len(n) > 200 || n[0] == '-' || n[0] == '.' {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Remove deletes the pair created with Config.Name = name (its two
// namespaces, which removes the veth pair). Missing namespaces are not an
// error.
func Remove(name string) error {
	if !validName(name) {
		return fmt.Errorf("netns: bad name %q", name)
	}
	var errs []error
	for _, ns := range []string{name + "-a", name + "-b"} {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			continue
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
