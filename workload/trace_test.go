package workload

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestTraceReaderLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		want TraceRecord
		bad  bool
	}{
		{name: "get", line: "12,nz_u_eeW5,44,120,7,get,0", want: TraceRecord{Time: 12, Key: []byte("nz_u_eeW5"), KeySize: 44, ValueSize: 120, ClientID: 7, Op: TraceGet}},
		{name: "set ttl", line: "1,k,1,2439,3,set,3600\r", want: TraceRecord{Time: 1, Key: []byte("k"), KeySize: 1, ValueSize: 2439, ClientID: 3, Op: TraceSet, TTL: 3600}},
		{name: "spaces", line: "1,k, 1 ,2 ,3, add ,0", want: TraceRecord{Time: 1, Key: []byte("k"), KeySize: 1, ValueSize: 2, ClientID: 3, Op: TraceAdd}},
		{name: "too few fields", line: "1,k,1,2,3,get", bad: true},
		{name: "too many fields", line: "1,k,1,2,3,get,0,9", bad: true},
		{name: "negative time", line: "-1,k,1,2,3,get,0", bad: true},
		{name: "empty key", line: "1,,1,2,3,get,0", bad: true},
		{name: "unknown op", line: "1,k,1,2,3,frob,0", bad: true},
		{name: "huge value", line: "1,k,1,99999999,3,get,0", bad: true},
		{name: "non-numeric client", line: "1,k,1,2,x,get,0", bad: true},
		{name: "long key", line: "1," + strings.Repeat("k", MaxTraceKeyBytes+1) + ",1,2,3,get,0", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewTraceReader(strings.NewReader(tt.line + "\n"))
			var rec TraceRecord
			err := r.Next(&rec)
			if tt.bad {
				if !errors.Is(err, ErrTrace) {
					t.Fatalf("err = %v, want ErrTrace", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Time != tt.want.Time || !bytes.Equal(rec.Key, tt.want.Key) || rec.KeySize != tt.want.KeySize ||
				rec.ValueSize != tt.want.ValueSize || rec.ClientID != tt.want.ClientID || rec.Op != tt.want.Op || rec.TTL != tt.want.TTL {
				t.Fatalf("got %+v, want %+v", rec, tt.want)
			}
			if err := r.Next(&rec); err != io.EOF {
				t.Fatalf("second Next = %v, want EOF", err)
			}
		})
	}
}

func TestTraceReaderSkipsHeader(t *testing.T) {
	r := NewTraceReader(strings.NewReader("time,key,key_size,value_size,client_id,op,ttl\n1,k,1,2,3,get,0\ntime,k,1,2,3,get,0\n"))
	var rec TraceRecord
	if err := r.Next(&rec); err != nil || string(rec.Key) != "k" {
		t.Fatalf("header not skipped: %v %q", err, rec.Key)
	}
	if err := r.Next(&rec); !errors.Is(err, ErrTrace) {
		t.Fatalf("a header-like line after line 1 must be an error, got %v", err)
	}
}

func TestTraceReaderLongLineRecovers(t *testing.T) {
	in := strings.Repeat("x", 3*MaxTraceLineBytes) + "\n1,k,1,2,3,get,0\n"
	r := NewTraceReader(strings.NewReader(in))
	var rec TraceRecord
	if err := r.Next(&rec); !errors.Is(err, ErrTrace) {
		t.Fatalf("err = %v, want ErrTrace", err)
	}
	if err := r.Next(&rec); err != nil || string(rec.Key) != "k" {
		t.Fatalf("after long line: %v %q", err, rec.Key)
	}
}

func TestTwitterTraceReplay(t *testing.T) {
	w, err := NewTwitterTrace(TraceConfig{Path: "testdata/twitter_sample.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Skipped() != 1 { // the delete line
		t.Errorf("skipped %d, want 1", w.Skipped())
	}
	if w.Requests() != 11 {
		t.Errorf("requests %d, want 11", w.Requests())
	}
	// the 9000-byte value is split into key0 (8192) and key1 (808)
	if s, ok := w.Model().Sizes([]byte("nz_u_aaaa11W3dcH3de3d15ec0")); !ok || len(s) != 1 || s[0] != 8192 {
		t.Errorf("chunk 0: %v %v", s, ok)
	}
	if s, ok := w.Model().Sizes([]byte("nz_u_aaaa11W3dcH3de3d15ec1")); !ok || s[0] != 808 {
		t.Errorf("chunk 1: %v %v", s, ok)
	}
	runAgainstStore(t, w, 1, 100)
	runAgainstStore(t, w, 3, 100)
	// unsupported ops are errors in strict mode
	f, err := os.Open("testdata/twitter_sample.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewTwitterTrace(TraceConfig{Reader: f, Strict: true}); !errors.Is(err, ErrTrace) {
		t.Errorf("strict: err = %v, want ErrTrace", err)
	}
	// stream follows trace order for one client
	st := w.NewStream(0, 1, 0)
	var req Request
	st.Next(&req)
	if req.Op != OpGet || string(req.Keys[0]) != "nz_u_eeW511W3dcH3de3d15ec" {
		t.Errorf("first request %s %q", req.Op, req.Keys[0])
	}
	st.Next(&req)
	if string(req.Keys[0]) != "nz_u_aaaa11W3dcH3de3d15ec0" {
		t.Errorf("second request %s %q, want chunk 0", req.Op, req.Keys[0])
	}
}

func FuzzTraceReader(f *testing.F) {
	f.Add([]byte("0,k,1,2,3,get,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewTraceReader(bytes.NewReader(data))
		var rec TraceRecord
		for range len(data) + 2 {
			err := r.Next(&rec)
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrTrace) {
					t.Fatalf("unexpected error type: %v", err)
				}
				continue
			}
			if len(rec.Key) == 0 || len(rec.Key) > MaxTraceKeyBytes || rec.ValueSize < 0 || rec.ValueSize > MaxTraceValueBytes || rec.Op == 0 {
				t.Fatalf("record out of limits: %+v", rec)
			}
		}
		t.Fatalf("reader did not reach EOF after %d calls", len(data)+2)
	})
}
