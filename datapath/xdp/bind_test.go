package xdp_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestBindMode covers Options.Bind on veth, which has no AF_XDP zero-copy
// support: requiring zero-copy fails with ErrNoZeroCopy and leaves nothing
// behind (the interface takes a new endpoint, the pool is back to zero);
// the default falls back to copy mode and says so; BindCopy binds in copy
// mode directly; an unknown mode is a configuration error.
func TestBindMode(t *testing.T) {
	tp := newTopo(t, 1500)
	pa, pb := tp.pool(t, "A"), tp.pool(t, "B")
	b := tp.open(t, tp.pair.B, pb, xdp.Options{Bind: xdp.BindCopy})
	defer b.Close()
	if m := b.Mode(); m != xdp.BindCopy {
		t.Errorf("BindCopy: Mode() = %v, want copy", m)
	}
	for _, c := range []struct {
		name    string
		bind    xdp.BindMode
		wantErr error
		want    xdp.BindMode
	}{
		{"zerocopy-required", xdp.BindZeroCopy, xdp.ErrNoZeroCopy, 0},
		{"bad-mode", xdp.BindMode(9), xdp.ErrConfig, 0},
		{"auto-falls-back", xdp.BindAuto, nil, xdp.BindCopy},
		{"copy", xdp.BindCopy, nil, xdp.BindCopy},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ep *xdp.Endpoint
			err := netns.Do(tp.pair.A.NS, func() (err error) {
				ep, err = xdp.Open(datapath.Config{Local: netip.AddrPortFrom(tp.pair.A.Addr4, 0), Pool: pa,
					Options: xdp.Options{Interface: tp.pair.A.If, Bind: c.bind}})
				return err
			})
			if c.wantErr != nil {
				if err == nil {
					_ = ep.Close()
					t.Fatalf("Open with Bind %v succeeded on veth, want %v", c.bind, c.wantErr)
				}
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Open with Bind %v: %v, want %v", c.bind, err, c.wantErr)
				}
				t.Logf("Open with Bind %v: %v", c.bind, err)
				if c.wantErr == xdp.ErrNoZeroCopy && !strings.Contains(err.Error(), tp.pair.A.If) {
					t.Errorf("error %q does not name the interface %s", err, tp.pair.A.If)
				}
				if n := pa.InUse(); n != 0 {
					t.Errorf("failed Open left %d pool items in use", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open with Bind %v: %v", c.bind, err)
			}
			defer func() {
				if err := ep.Close(); err != nil {
					t.Error(err)
				}
			}()
			if m := ep.Mode(); m != c.want || ep.Info().ZeroCopy != (c.want == xdp.BindZeroCopy) {
				t.Errorf("Mode() = %v, Info().ZeroCopy = %v; want %v", m, ep.Info().ZeroCopy, c.want)
			}
			if a := ep.Info().Attach; a != xdp.AttachGeneric {
				t.Errorf("Info().Attach = %v on veth with AttachAuto, want generic", a)
			}
			if m, ok := xdp.ModeOf(ep); !ok || m != c.want {
				t.Errorf("ModeOf = %v, %v; want %v, true", m, ok, c.want)
			}
			// The endpoint works (after the failed opens on the same
			// interface, which left no program or socket behind).
			msg := []byte("bound " + c.name)
			if err := ep.Send(b.LocalAddr(), msg); err != nil {
				t.Fatal(err)
			}
			p := recvOne(t, b, ep)
			if string(p.Buf.Bytes()) != string(msg) {
				t.Errorf("got %q, want %q", p.Buf.Bytes(), msg)
			}
			memtest.Release(t, p.Buf)
		})
	}
	if _, ok := xdp.ModeOf(datapath.Endpoint(nil)); ok {
		t.Error("ModeOf(nil) reported an xdp endpoint")
	}
}

func TestBindModeString(t *testing.T) {
	for m, want := range map[xdp.BindMode]string{xdp.BindAuto: "auto", xdp.BindCopy: "copy", xdp.BindZeroCopy: "zerocopy", 7: "BindMode(7)"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", m, got, want)
		}
	}
}
