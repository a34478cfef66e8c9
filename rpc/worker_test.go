package rpc_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestWorkerDecodesAndAnswersObjects: a worker handler decodes its
// request zero-copy (wire takes references on the request bytes), answers
// with an object from its own arena and reuses that arena as soon as
// Respond returns, while the endpoint's loop goes on serving on its own
// goroutine. Run with -race: the request bytes used to be the endpoint's
// single-goroutine memory (a data race on its reference counts), and the
// answer used to be serialized by the loop after Respond had returned
// (the arena's reuse corrupted or rejected it).
func TestWorkerDecodesAndAnswersObjects(t *testing.T) {
	const tObj = 40
	var bad atomic.Int32
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	srv := newNode(t, o, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(tObj, rpc.Worker, func(r *rpc.Request) {
			a := wire.NewArena() // the worker's own
			defer func() { _ = a.Reset() }()
			req := kvpb.NewReq(a)
			if err := req.DecodeBytes(r.Data()); err != nil {
				bad.Add(1)
				_ = r.RespondBytes(nil)
				return
			}
			keys, err := req.GetKeys()
			if err != nil || keys.Len() != 1 {
				bad.Add(1)
				_ = r.RespondBytes(nil)
				return
			}
			resp := kvpb.NewResp(a)
			resp.SetVal(bytes.Repeat(keys.At(0), 3)) // copied into a
			if err := r.Respond(rpc.ObjectMsg(resp)); err != nil {
				t.Errorf("worker Respond: %v", err)
			}
			// Respond returned: the arena is the worker's again.
			_ = a.Reset()
			junk := kvpb.NewResp(a)
			junk.SetStatus(9)
			junk.SetVal(bytes.Repeat([]byte{'!'}, 300))
		})
	}, nil)
	srv.serve()
	cli := newNode(t, o, 2, nil, nil)
	s := cli.connect(t, srv.nx, 1)

	const n, window = 400, 8
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	sent, done, failed := 0, 0, 0
	var issue func()
	issue = func() {
		key := fmt.Sprintf("key-%04d-%s", sent, bytes.Repeat([]byte{'k'}, sent%200))
		sent++
		req := kvpb.NewReq(a)
		req.InitKeys(1).AppendString(key)
		err := cli.ep.Enqueue(s, tObj, rpc.ObjectMsg(req), func(r *rpc.Response) {
			done++
			resp := kvpb.NewResp(a)
			if r.Err != nil {
				t.Errorf("%s: %v", key, r.Err)
				failed++
			} else if err := resp.DecodeBytes(r.Data()); err != nil || resp.GetStatus() != 0 || string(resp.GetVal()) != key+key+key {
				t.Errorf("%s: answer %v (decode %v)", key, resp, err)
				failed++
			}
			if sent < n && failed == 0 {
				issue()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for range window {
		issue()
	}
	cli.runUntil(t, 30*time.Second, func() bool { return done == sent || failed > 0 })
	if bad.Load() != 0 || done != n {
		t.Errorf("%d answered of %d, %d bad requests at the worker", done, n, bad.Load())
	}
}

// TestWorkerRespondErrors: a worker's Respond reports what goes wrong
// with its answer instead of nil: a second answer is ErrAlreadyResponded,
// an answer too large for the endpoint is ErrTooLarge (and the client sees
// ErrRejected), and RespondPre checks its length.
func TestWorkerRespondErrors(t *testing.T) {
	got := make(chan []error, 4)
	o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})}
	srv := newNode(t, o, 1, func(nx *rpc.Nexus, _ *counter) {
		_ = nx.Register(41, rpc.Worker, func(r *rpc.Request) {
			first := r.RespondBytes([]byte("one"))
			second := r.RespondBytes([]byte("two"))
			got <- []error{first, second}
		})
		_ = nx.Register(42, rpc.Worker, func(r *rpc.Request) {
			huge := r.RespondBytes(make([]byte, r.Endpoint().MaxMsgSize()+1))
			got <- []error{huge}
		})
		_ = nx.Register(43, rpc.Worker, func(r *rpc.Request) {
			pre := r.PreResp()
			tooLong := r.RespondPre(len(pre) + 1)
			ok := r.RespondPre(copy(pre, "pre"))
			got <- []error{tooLong, ok}
		})
	}, nil)
	srv.serve()
	cli := newNode(t, o, 2, nil, nil)
	s := cli.connect(t, srv.nx, 1)
	call := func(typ uint8) (string, error) {
		var data string
		var rerr error
		finished := false
		if err := cli.ep.Enqueue(s, typ, rpc.BytesMsg([]byte("x")), func(r *rpc.Response) {
			data, rerr, finished = string(r.Data()), r.Err, true
		}); err != nil {
			t.Fatal(err)
		}
		cli.runUntil(t, 10*time.Second, func() bool { return finished })
		return data, rerr
	}

	if data, err := call(41); err != nil || data != "one" {
		t.Errorf("answer %q, %v; want %q", data, err, "one")
	}
	if errs := <-got; errs[0] != nil || !errors.Is(errs[1], rpc.ErrAlreadyResponded) {
		t.Errorf("Respond twice: %v, %v; want nil, ErrAlreadyResponded", errs[0], errs[1])
	}
	if _, err := call(42); !errors.Is(err, rpc.ErrRejected) {
		t.Errorf("client of a refused answer: %v, want ErrRejected", err)
	}
	if errs := <-got; !errors.Is(errs[0], rpc.ErrTooLarge) {
		t.Errorf("Respond beyond MaxMsgSize: %v, want ErrTooLarge", errs[0])
	}
	if data, err := call(43); err != nil || data != "pre" {
		t.Errorf("answer %q, %v; want %q", data, err, "pre")
	}
	if errs := <-got; !errors.Is(errs[0], rpc.ErrTooLarge) || errs[1] != nil {
		t.Errorf("RespondPre: %v, %v; want ErrTooLarge, nil", errs[0], errs[1])
	}
}
