package microbench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sampleRecords is a small run's records as Run returns them: two shapes, Cornflakes in two
// modes and two baselines, ops decode and echo (values with at most two decimals, so that
// WriteJSON's rounding leaves them as they are).
func sampleRecords() []Record {
	var recs []Record
	for _, shape := range []string{"1x1024", "google-1-4"} {
		for _, lib := range []struct{ name, mode string }{{"cornflakes", "hybrid"}, {"cornflakes", "zerocopy"}, {"vtprotobuf", ""}, {"capnp", ""}} {
			for _, op := range []string{"decode", "echo"} {
				ns := 40.5
				switch {
				case lib.name == "capnp":
					ns = 2000
				case lib.name == "vtprotobuf":
					ns = 50
				case lib.mode == "zerocopy":
					ns = 25
				}
				if op == "echo" {
					ns *= 3
				}
				recs = append(recs, Record{Library: lib.name, Mode: lib.mode, Shape: shape, Op: op,
					NsPerOp: ns, AllocsPerOp: 0, BytesPerOp: 0.25})
			}
		}
	}
	return recs
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") // WriteFiles creates it
	recs := sampleRecords()
	paths, err := WriteFiles(dir, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"microbench.json", "microbench.csv", "microbench-decode.png", "microbench-echo.png"}
	var got []string
	for _, p := range paths {
		if filepath.Dir(p) != dir {
			t.Errorf("wrote %s outside %s", p, dir)
		}
		got = append(got, filepath.Base(p))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}

	// microbench.json: what --json prints, and the records with their ratio to the fastest
	// baseline (vtprotobuf at 50 ns for decode, 150 ns for echo).
	b, err := os.ReadFile(filepath.Join(dir, "microbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, recs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, js.Bytes()) {
		t.Errorf("microbench.json differs from WriteJSON's output:\n%s\nwant:\n%s", b, js.Bytes())
	}
	var back []Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("microbench.json: %v", err)
	}
	wantRecs := sampleRecords()
	for i := range wantRecs {
		wantRecs[i].VsBestBaseline = wantRecs[i].NsPerOp / 50
		if wantRecs[i].Op == "echo" {
			wantRecs[i].VsBestBaseline = wantRecs[i].NsPerOp / 150
		}
		wantRecs[i].VsBestBaseline = round2(wantRecs[i].VsBestBaseline)
	}
	if !reflect.DeepEqual(back, wantRecs) {
		t.Errorf("microbench.json does not round-trip:\n got %+v\nwant %+v", back, wantRecs)
	}

	// microbench.csv: a header of the JSON field names in their order, then one row a record.
	f, err := os.Open(filepath.Join(dir, "microbench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	_ = f.Close()
	if err != nil {
		t.Fatalf("microbench.csv: %v", err)
	}
	if len(rows) != len(recs)+1 {
		t.Fatalf("microbench.csv: %d rows, want %d (header and one a record)", len(rows), len(recs)+1)
	}
	if h := strings.Join(rows[0], ","); h != strings.Join(jsonFieldNames(t), ",") {
		t.Errorf("microbench.csv header %q, want the JSON field names %q", h, strings.Join(jsonFieldNames(t), ","))
	}
	// Row 3 is the second record: cornflakes/hybrid 1x1024 echo, 121.5 ns, 0.81 of vtprotobuf's.
	if r := strings.Join(rows[2], ","); r != "cornflakes,hybrid,1x1024,echo,121.5,0,0.25,0.81" {
		t.Errorf("microbench.csv row 3 = %q", r)
	}

	for _, name := range want[2:] {
		checkPNG(t, filepath.Join(dir, name))
	}
}

// jsonFieldNames returns Record's JSON keys in the order encoding/json writes them.
func jsonFieldNames(t *testing.T) []string {
	t.Helper()
	b, err := json.Marshal(Record{VsBestBaseline: 1})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("%s: %dx%d, too small for a plot", path, b.Dx(), b.Dy())
	}
}

// A run that measured one op writes that op's plot only; one without baselines leaves
// vs_best_baseline out of the JSON and empty in the CSV.
func TestWriteFilesOneOp(t *testing.T) {
	var recs []Record
	for _, r := range sampleRecords() {
		if r.Op == "echo" && r.Library == "cornflakes" {
			recs = append(recs, r)
		}
	}
	dir := t.TempDir()
	paths, err := WriteFiles(dir, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 || filepath.Base(paths[2]) != "microbench-echo.png" {
		t.Fatalf("wrote %v, want the JSON and CSV files and microbench-echo.png", paths)
	}
	for _, op := range []string{"serialize", "decode"} {
		if _, err := os.Stat(filepath.Join(dir, "microbench-"+op+".png")); err == nil {
			t.Errorf("microbench-%s.png written for a run without %s", op, op)
		}
	}
	checkPNG(t, paths[2])
	b, err := os.ReadFile(filepath.Join(dir, "microbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("vs_best_baseline")) {
		t.Errorf("microbench.json has vs_best_baseline without baselines:\n%s", b)
	}
	csvb, err := os.ReadFile(filepath.Join(dir, "microbench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(csvb)), "\n"); len(lines) != len(recs)+1 || !strings.HasSuffix(lines[1], ",") {
		t.Errorf("microbench.csv:\n%s\nwant %d records, each with an empty vs_best_baseline", csvb, len(recs))
	}
}

// No records still writes the (empty) data files and no plot.
func TestWriteFilesEmpty(t *testing.T) {
	paths, err := WriteFiles(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 {
		t.Fatalf("wrote %v, want the JSON and CSV files only", paths)
	}
}
