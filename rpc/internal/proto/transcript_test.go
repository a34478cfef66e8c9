package proto

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestTranscripts replays testdata/*.txt with the data-driven test library
// (github.com/cockroachdb/datadriven, as etcd's raft uses): each block is a
// command line, a "----" line and the expected output, separated by blank
// lines. If this test fails after an intended change, run
//
//	go test ./rpc/internal/proto -run TestTranscripts -rewrite
//
// and inspect the diff.
//
// Commands:
//
//	world [dpp=N] [credits=N] [window=N] [selective]   start a client+server pair
//	      [reasm-budget=N] [reasm-session=N] [reasm-initial=N] [reasm-timeout-ms=N]
//	enqueue req=N resp=N [count=K]                      client requests (response size chosen now)
//	deliver c2s|s2c [i,j,...]                           deliver in-flight packets (default: all), in that order
//	drop c2s|s2c i,j,...                                lose in-flight packets
//	dup c2s|s2c i                                       duplicate an in-flight packet (appended)
//	respond [all]                                       answer the oldest (or every) pending request
//	tick ms=N | us=N                                    advance the clock
//	cancel tag=N                                        abandon a client request
//	remove client|server                                tear a session down
//	state                                               slots, credits and in-flight counts
//	stats                                               handler/completion/retransmit counters
//	reasm                                               the server's reassembly counters
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var w *world
			defer func() {
				if w != nil {
					w.closeAll()
				}
			}()
			datadriven.RunTest(t, f, func(t *testing.T, d *datadriven.TestData) string {
				return runCmd(t, &w, d.FullCmd()) + "\n"
			})
		})
	}
}

func runCmd(t *testing.T, wp **world, line string) string {
	f := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	num := func(k string, def int) int {
		v, ok := args[k]
		if !ok {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: bad %s", line, k)
		}
		return n
	}
	list := func(i int) []int {
		if len(pos) <= i {
			return nil
		}
		var r []int
		for _, s := range strings.Split(pos[i], ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s: bad index %q", line, s)
			}
			r = append(r, n)
		}
		return r
	}
	if f[0] == "world" {
		cfg := Config{DataPerPkt: num("dpp", 100), Credits: num("credits", 0), Window: num("window", 0),
			ReasmBudget: int64(num("reasm-budget", 0)), ReasmSessionBudget: int64(num("reasm-session", 0)),
			ReasmInitial: num("reasm-initial", 0), ReasmTimeout: time.Duration(num("reasm-timeout-ms", 0)) * time.Millisecond}
		for _, p := range pos {
			if p == "selective" {
				cfg.Selective = true
			}
		}
		*wp = newWorld(t, cfg)
		return "ok"
	}
	w := *wp
	if w == nil {
		t.Fatalf("%s: no world", line)
	}
	w.log.Reset()
	switch f[0] {
	case "enqueue":
		for i := 0; i < num("count", 1); i++ {
			w.enqueue(num("req", 10), num("resp", 10))
		}
	case "deliver":
		q := w.c2s
		if pos[0] == "s2c" {
			q = w.s2c
		}
		idx := list(1)
		if idx == nil {
			idx = all(len(q))
		}
		w.deliver(pos[0], idx)
	case "drop":
		w.drop(pos[0], list(1))
	case "dup":
		q := &w.c2s
		if pos[0] == "s2c" {
			q = &w.s2c
		}
		i := list(1)[0]
		if i >= len(*q) {
			t.Fatalf("%s: no packet %d", line, i)
		}
		*q = append(*q, (*q)[i])
	case "respond":
		n := 1
		if len(pos) > 0 && pos[0] == "all" {
			n = len(w.pending)
		}
		for i := 0; i < n; i++ {
			w.respond()
		}
	case "tick":
		d := time.Duration(num("ms", 0))*time.Millisecond + time.Duration(num("us", 0))*time.Microsecond
		w.tick(int64(d))
	case "cancel":
		if !w.cli.Cancel(0, uint64(num("tag", 0)), ErrSessionDown) {
			return "not found"
		}
		w.flush()
	case "remove":
		if pos[0] == "client" {
			_ = w.cli.RemoveSession(0, ErrSessionDown)
		} else {
			_ = w.srv.RemoveSession(5, ErrSessionDown)
		}
		w.flush()
		s := strings.TrimRight(w.log.String(), "\n")
		if s == "" {
			s = "(nothing)"
		}
		return s
	case "state":
		w.checkInvariants()
		return w.state()
	case "reasm":
		s := w.srv.Stats()
		return fmt.Sprintf("bytes=%d peak=%d grows=%d refused=%d timeouts=%d live-buffers=%d",
			s.ReasmBytes, s.ReasmPeak, s.ReasmGrows, s.ReasmRefused, s.ReasmTimeouts, w.sa.live)
	case "stats":
		c, s := w.cli.Stats(), w.srv.Stats()
		return fmt.Sprintf("handlers=%d completed=%d failed=%d retransmits=%d rtos=%d fast=%d dup-responses=%d client-drops=%d server-drops=%d",
			s.Handlers, c.Completed, c.Failed, c.Retransmits, c.RTOs, c.FastRetransmits, s.DupResponses, c.DropOrder+c.DropBad, s.DropOrder+s.DropBad)
	default:
		t.Fatalf("unknown command %q", f[0])
	}
	w.checkInvariants()
	s := strings.TrimRight(w.log.String(), "\n")
	if s == "" {
		s = "(nothing)"
	}
	return s
}
