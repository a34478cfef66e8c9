package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a bytes.Buffer safe for a writer and a reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMetricsFlag: kv serve and resp serve with --metrics serve the
// Prometheus endpoint over HTTP on loopback while they run.
func TestMetricsFlag(t *testing.T) {
	re := regexp.MustCompile(`metrics at (http://[0-9.:]+/metrics)`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kv", "serve", "--duration", "3s", "--metrics", "127.0.0.1:0"}, "cornflakes_kv_requests_total 0"},
		{[]string{"resp", "serve", "--addr", "127.0.0.1:0", "--pool-mb", "16", "--metrics", "127.0.0.1:0"}, "cornflakes_resp_commands_total 0"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.args[0] == "resp" {
				old := respServeContext
				respServeContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
				defer func() { respServeContext = old }()
			}
			var out, errb syncBuf
			done := make(chan int, 1)
			go func() { done <- run(tc.args, &out, &errb) }()
			var url string
			for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if m := re.FindStringSubmatch(errb.String()); m != nil {
					url = m[1]
				}
			}
			if url == "" {
				t.Fatalf("no metrics address in %q", errb.String())
			}
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, w := range []string{tc.want, "cornflakes_wire_silent_copies_total", "go_goroutines"} {
				if !strings.Contains(string(body), w) {
					t.Errorf("no %q in the scrape", w)
				}
			}
			cancel() // resp serve stops now, kv serve after --duration
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("exit %d: %s", code, errb.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server did not stop")
			}
		})
	}
}
