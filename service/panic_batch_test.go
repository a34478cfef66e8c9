package service_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// batchEcho echoes, and panics for a request starting with 'P'; it
// records the order of the calls it ran and the server step of each (the
// lockstep's single goroutine runs it).
type batchEcho struct {
	typedpb.UnimplementedEchoServer
	step  *int
	order *[]string
	ran   map[string]int
}

func (e batchEcho) Echo(_ context.Context, req, resp *typedpb.Blob) error {
	d := string(req.GetData())
	*e.order = append(*e.order, d)
	e.ran[d] = *e.step
	if d[0] == 'P' {
		panic("batch panic " + d)
	}
	resp.SetData(req.GetData())
	return nil
}

// TestPanicInBatch: the server's dispatch requests are guarded once per
// batch (rpc.Nexus.RegisterLoop's recovered function), not once per call;
// a panic still fails only its own call (Internal, naming the panic) and
// the calls after it in the same batch are served. The client sends a
// window of calls, every fourth panicking, in one step, so that the server
// receives them in one poll; the test checks that a good call ran after a
// panicking one in the same server step, then that a second round is
// served.
func TestPanicInBatch(t *testing.T) {
	step := 0
	var order []string
	impl := batchEcho{step: &step, order: &order, ran: map[string]int{}}
	l := newLockstepImpl(t, false, &typedpb.Echo_ServiceDesc, impl)
	cl := typedpb.NewEchoClient(l.c)
	release := service.LeadHere(l.c)
	defer release()
	for round := 0; round < 2; round++ {
		done := 0
		var errs []error
		for i := 0; i < lockstepWindow; i++ {
			kind := "G"
			if round == 0 && i%4 == 1 {
				kind = "P"
			}
			name := fmt.Sprintf("%s%d-%02d", kind, round, i)
			a := wire.NewArena()
			req := typedpb.NewBlob(a)
			req.SetData([]byte(name))
			call := cl.NewEchoCall(wire.NewArena(), func(resp *typedpb.Blob, err error) {
				done++
				switch {
				case kind == "P" && (service.CodeOf(err) != service.Internal || !strings.Contains(err.Error(), "batch panic "+name)):
					errs = append(errs, fmt.Errorf("%s: %v, want Internal naming its panic", name, err))
				case kind == "G" && err != nil:
					errs = append(errs, fmt.Errorf("%s: %v", name, err))
				case kind == "G" && !bytes.Equal(resp.GetData(), []byte(name)):
					errs = append(errs, fmt.Errorf("%s: echo %q", name, resp.GetData()))
				}
			})
			if err := call.Start(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; done < lockstepWindow && i < 1e6; i++ {
			if err := l.clientStep(); err != nil {
				t.Fatal(err)
			}
			step++
			if err := l.serverStep(); err != nil {
				t.Fatal(err)
			}
		}
		for _, err := range errs {
			t.Error(err)
		}
		if done < lockstepWindow {
			t.Fatalf("round %d: %d of %d calls done", round, done, lockstepWindow)
		}
	}
	sameBatch := false
	for i := 1; i < len(order); i++ {
		if order[i-1][0] == 'P' && order[i][0] == 'G' && impl.ran[order[i-1]] == impl.ran[order[i]] {
			sameBatch = true
		}
	}
	if !sameBatch {
		t.Fatalf("no call served after a panicking one in the same server step: %v", order)
	}
}
