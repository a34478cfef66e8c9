package service_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	v2 "github.com/cornflakes-go/cornflakes/service/internal/svcv2"
	"github.com/cornflakes-go/cornflakes/wire"
)

func registerV2(s *service.Server) error {
	if err := v2.RegisterGreeterServer(s, &greeterV2{}); err != nil {
		return err
	}
	return v2.RegisterCalcServer(s, calcV2{})
}

type calcV2 struct{ v2.UnimplementedCalcServer }

// The incompatible change of version 2, as both sides report it.
const lookupIncompat = `method /cornflakes.svctest.Greeter/Lookup: request field 1 "id" of cornflakes.svctest.LookupRequest`

// TestV2ServerServesV1Client: a v1 client binds to a v2 server (added
// fields and methods: compatible), and is refused Lookup, whose request
// changed a field's kind, at bind time with an error naming the method and
// the field.
func TestV2ServerServesV1Client(t *testing.T) {
	h := newHarness(t, netKind{}, registerV2)
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	req := v1.NewHelloRequest(a)
	req.SetName("old")
	req.SetSeq(7)
	resp, err := g.SayHello(callCtx(t), a, req)
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := resp.GetMessage(); msg != "hello, old" || resp.GetSeq() != 7 {
		t.Fatalf("got %q seq %d", msg, resp.GetSeq())
	}
	lr := v1.NewLookupRequest(a)
	lr.SetId(5)
	_, err = g.Lookup(callCtx(t), a, lr)
	checkIncompatible(t, err, "uint64 on the client, string on the server")
	// Unchanged methods of the other service bind identically.
	if _, err := v1.NewCalcClient(h.dial()).SumTree(callCtx(t), a, v1.NewTree(a)); service.CodeOf(err) != service.Unimplemented {
		t.Fatalf("Calc.SumTree on calcV2 (embedding Unimplemented): %v", err)
	}
}

// TestV2ClientCallsV1Server: a v2 client gets Unimplemented for the method
// the v1 server lacks, is served the others, and is refused Lookup.
func TestV2ClientCallsV1Server(t *testing.T) {
	h := newHarness(t, netKind{}, registerV1(newGreeterV1()))
	g := v2.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	req := v2.NewHelloRequest(a)
	req.SetName("new")
	req.SetGreeting("ignored by v1")
	resp, err := g.SayHello(callCtx(t), a, req)
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := resp.GetMessage(); msg != "hello, new" || resp.GetLength() != 0 {
		t.Fatalf("got %q length %d", msg, resp.GetLength())
	}
	_, err = g.SayGoodbye(callCtx(t), a, req)
	var se *service.Error
	if !errors.As(err, &se) || se.Code != service.Unimplemented || !strings.Contains(se.Message, "/cornflakes.svctest.Greeter/SayGoodbye") {
		t.Fatalf("SayGoodbye on v1: %v, want Unimplemented naming the method", err)
	}
	lr := v2.NewLookupRequest(a)
	lr.SetId("5")
	_, err = g.Lookup(callCtx(t), a, lr)
	checkIncompatible(t, err, "string on the client, uint64 on the server")
	// The refusal is remembered by nobody: a second call binds again and is refused again.
	_, err = g.Lookup(callCtx(t), a, lr)
	checkIncompatible(t, err, "string on the client, uint64 on the server")
}

func checkIncompatible(t *testing.T, err error, kinds string) {
	t.Helper()
	var se *service.Error
	if !errors.Is(err, service.ErrIncompatible) || !errors.As(err, &se) || se.Code != service.FailedPrecondition {
		t.Fatalf("got %v, want ErrIncompatible with code FailedPrecondition", err)
	}
	if !strings.Contains(err.Error(), lookupIncompat) || !strings.Contains(err.Error(), kinds) {
		t.Fatalf("error %q does not name %q and %q", err, lookupIncompat, kinds)
	}
}

// TestFingerprintGolden pins the fingerprints: a change of the algorithm
// or of the generator's message tables shows here. Version 2 changes the
// fingerprints of what it changed, and only those.
func TestFingerprintGolden(t *testing.T) {
	got := map[string]uint64{}
	for _, d := range []struct {
		v    string
		desc *service.ServiceDesc
	}{{"v1", &v1.Greeter_ServiceDesc}, {"v1", &v1.Calc_ServiceDesc}, {"v2", &v2.Greeter_ServiceDesc}, {"v2", &v2.Calc_ServiceDesc}} {
		for i, m := range d.desc.Messages {
			if fp := service.MessageFingerprint(d.desc.Messages, i); fp != m.Fingerprint {
				t.Errorf("%s %s: generated %#x, computed %#x", d.v, m.Name, m.Fingerprint, fp)
			}
			got[d.v+" "+m.Name] = m.Fingerprint
		}
		for i := range d.desc.Methods {
			m := &d.desc.Methods[i]
			if fp := service.MethodFingerprint(d.desc.Name, d.desc.Messages, m); fp != m.Fingerprint {
				t.Errorf("%s %s: generated %#x, computed %#x", d.v, d.desc.FullMethod(i), m.Fingerprint, fp)
			}
			got[d.v+" "+d.desc.FullMethod(i)] = m.Fingerprint
		}
	}
	want := map[string]uint64{
		"v1 cornflakes.svctest.HelloRequest":        0xd605961a789346ea,
		"v1 cornflakes.svctest.HelloReply":          0xb91b5e6c746cc2b1,
		"v1 cornflakes.svctest.FailRequest":         0xa8df742ada8a8e88,
		"v1 cornflakes.svctest.LookupRequest":       0xad2d453bf87305b5,
		"v1 /cornflakes.svctest.Greeter/SayHello":   0x3930cbff2c5c9cfc,
		"v1 /cornflakes.svctest.Greeter/Fail":       0x3be95636a4904d58,
		"v1 /cornflakes.svctest.Greeter/Sleep":      0xda1854dbddcade6e,
		"v1 /cornflakes.svctest.Greeter/Panic":      0x62b755cbab91bf52,
		"v1 /cornflakes.svctest.Greeter/Lookup":     0x7de2d902e5f9833e,
		"v1 cornflakes.svctest.Tree":                0xd2ed4793cb7d2aba,
		"v1 cornflakes.svctest.Tree.Inner":          0x03a962116779e272,
		"v1 cornflakes.svctest.Sum":                 0x96877a86f5bd876c,
		"v1 /cornflakes.svctest.Calc/SumTree":       0xdc92e6f25d75441b,
		"v2 cornflakes.svctest.HelloRequest":        0xd2476125cb8ca8c6,
		"v2 cornflakes.svctest.HelloReply":          0x89672030e83d01c8,
		"v2 cornflakes.svctest.FailRequest":         0xa8df742ada8a8e88,
		"v2 cornflakes.svctest.LookupRequest":       0xad01173bf84d7ca0,
		"v2 /cornflakes.svctest.Greeter/SayHello":   0x20c6b4b22d651c93,
		"v2 /cornflakes.svctest.Greeter/Fail":       0x9e02afa2daae9acf,
		"v2 /cornflakes.svctest.Greeter/Sleep":      0x2209e8397ccc8ec5,
		"v2 /cornflakes.svctest.Greeter/Panic":      0x39f121f54a381f69,
		"v2 /cornflakes.svctest.Greeter/Lookup":     0x400d389901447d93,
		"v2 /cornflakes.svctest.Greeter/SayGoodbye": 0x6e637eee79a3de8a,
		"v2 cornflakes.svctest.Tree":                0xd2ed4793cb7d2aba,
		"v2 cornflakes.svctest.Tree.Inner":          0x03a962116779e272,
		"v2 cornflakes.svctest.Sum":                 0x96877a86f5bd876c,
		"v2 /cornflakes.svctest.Calc/SumTree":       0xdc92e6f25d75441b,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: fingerprint %#016x, want %#016x", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d fingerprints, %d pinned", len(got), len(want))
	}
	same := func(k string) bool { return got["v1 "+k] == got["v2 "+k] }
	for k, eq := range map[string]bool{
		"cornflakes.svctest.HelloRequest": false, "cornflakes.svctest.HelloReply": false, "cornflakes.svctest.LookupRequest": false,
		"cornflakes.svctest.FailRequest": true, "cornflakes.svctest.Tree": true, "cornflakes.svctest.Sum": true,
		"/cornflakes.svctest.Calc/SumTree": true, "/cornflakes.svctest.Greeter/Fail": false, // its response changed
	} {
		if same(k) != eq {
			t.Errorf("%s: v1 and v2 fingerprints equal: %v, want %v", k, same(k), eq)
		}
	}
}

// TestRebind: a server that does not know a client's binding (here a new
// Server replacing the first on the same Nexus, its methods under other
// handles, as after a restart) asks the client to bind again, which it
// does once, transparently.
func TestRebind(t *testing.T) {
	gs := newGreeterV1()
	h := newHarness(t, netKind{}, registerV1(gs))
	g := v1.NewGreeterClient(h.dial())
	a := wire.NewArena()
	defer a.Reset()
	req := v1.NewHelloRequest(a)
	req.SetName("before")
	if _, err := g.SayHello(callCtx(t), a, req); err != nil {
		t.Fatal(err)
	}
	srv2, err := service.NewServer(h.srvNx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.RegisterCalcServer(srv2, calc{}); err != nil { // takes handle 0
		t.Fatal(err)
	}
	if err := v1.RegisterGreeterServer(srv2, gs); err != nil {
		t.Fatal(err)
	}
	req.SetName("after")
	resp, err := g.SayHello(callCtx(t), a, req)
	if err != nil {
		t.Fatalf("after the server forgot the binding: %v", err)
	}
	if msg, _ := resp.GetMessage(); msg != "hello, after" {
		t.Fatalf("got %q", msg)
	}
}
