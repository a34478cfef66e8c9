package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNaosbenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	code := run([]string{"naosbench", "--json", "--benchtime", "2ms", "--structures", "float32,pair-ptr",
		"--sizes", "16,300", "--libraries", "naos,naosit,vtprotobuf", "--transports", "tcp,rpc", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var recs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	for _, r := range recs {
		for _, f := range []string{"structure", "size", "library", "transport", "op", "value", "unit"} {
			if _, ok := r[f]; !ok {
				t.Fatalf("record lacks %s: %v", f, r)
			}
		}
		if v, _ := r["value"].(float64); !(v > 0 || r["op"] == "cpu" && v == 0) { // CPU time counts in clock ticks
			t.Errorf("record without a positive value: %v", r)
		}
		seen[r["structure"].(string)+" "+r["library"].(string)+" "+r["transport"].(string)+" "+r["op"].(string)] = true
	}
	// naosit only for the structures held by pointer.
	for _, k := range []string{"float32 naos tcp latency", "pair-ptr naosit rpc throughput", "float32 vtprotobuf rpc latency"} {
		if !seen[k] {
			t.Errorf("missing %s", k)
		}
	}
	if seen["float32 naosit tcp latency"] {
		t.Error("naosit measured for float32")
	}
	if len(recs) != 3*2*2*(2+3) {
		t.Errorf("%d records", len(recs))
	}
	for _, f := range []string{"naosbench.json", "naosbench.csv", "tcp_float32_latency.png", "rpc_pair-ptr_throughput.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestNaosbenchErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--structures", "trees"},
		{"--libraries", "kryo"},
		{"--transports", "rdma"},
		{"--sizes", "0"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"naosbench", "--out", t.TempDir()}, args...), &out, &errb); code != 1 {
			t.Errorf("%v: exit %d", args, code)
		}
		if !strings.Contains(errb.String(), strings.TrimPrefix(args[1], "")) && !strings.Contains(errb.String(), "size") {
			t.Errorf("%v: stderr %s", args, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"naosbench", "extra"}, &out, &errb); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
}
