package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestMicrobenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"microbench", "--json", "--benchtime", "1ms", "--shapes", "2x2048,tree5",
		"--libraries", "vtprotobuf,cornflakes/hybrid", "--ops", "echo,decode", "--out", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []struct {
		Library     string   `json:"library"`
		Mode        *string  `json:"mode"`
		Shape       string   `json:"shape"`
		Op          string   `json:"op"`
		NsPerOp     *float64 `json:"ns_per_op"`
		AllocsPerOp *float64 `json:"allocs_per_op"`
		BytesPerOp  *float64 `json:"bytes_per_op"`
	}
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Mode == nil || r.NsPerOp == nil || r.AllocsPerOp == nil || r.BytesPerOp == nil {
			t.Fatalf("record lacks a field: %+v", r)
		}
		seen[r.Library+"/"+*r.Mode+" "+r.Shape+" "+r.Op] = true
	}
	for _, lib := range []string{"vtprotobuf/", "cornflakes/hybrid"} {
		for _, shape := range []string{"2x2048", "tree5"} {
			for _, op := range []string{"echo", "decode"} {
				if k := lib + " " + shape + " " + op; !seen[k] {
					t.Errorf("missing record %s", k)
				}
			}
		}
	}
	if len(recs) != 8 {
		t.Errorf("%d records, want 8", len(recs))
	}
	if !strings.Contains(errb.String(), "microbench: tree5") {
		t.Errorf("no progress on stderr: %q", errb.String())
	}
}

func TestMicrobenchTable(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"microbench", "--benchtime", "1ms", "--shapes", "1x1024", "--libraries", "flatbuffers,capnp", "--ops", "serialize", "--out", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	for _, s := range []string{"1x1024", "flatbuffers", "capnp", "serialize", "ratio"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestMicrobenchBadArgs(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"--shapes", "3x"}, 1, "unknown shape"},
		{[]string{"--libraries", "thrift"}, 1, "unknown library"},
		{[]string{"--libraries", "cornflakes/turbo"}, 1, "unknown mode"},
		{[]string{"--ops", "encode"}, 1, "unknown op"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(append([]string{"microbench"}, tt.args...), &out, &errb)
		if code != tt.code || !strings.Contains(errb.String(), tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tt.args, code, errb.String(), tt.code, tt.msg)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote to stdout: %q", tt.args, out.String())
		}
	}
}
