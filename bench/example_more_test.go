package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// exampleSeries is a small comparison as RunExperiment returns it: two
// serializers on one workload, each with two load points, the second of
// which missed the SLO, and a saturation point.
func exampleSeries() []bench.Series {
	return []bench.Series{
		{Experiment: "demo", Workload: "twitter", Serializer: "cornflakes", Mode: "hybrid", Datapath: "udp",
			SLOP99us: 500, MaxRPSAtSLO: 20000, MaxAchievedRPS: 39000, MaxRPSSaturated: 60000, SaturatedServerCPUus: 4,
			LoadAvg: 0.5, CPUs: 2, BusyPoll: true,
			Points: []bench.Point{
				{OfferedRPS: 20000, AchievedRPS: 20000, P50us: 40, P99us: 120, P999us: 300, MeetsSLO: true},
				{OfferedRPS: 40000, AchievedRPS: 39000, P50us: 90, P99us: 900, P999us: 2000},
			}},
		{Experiment: "demo", Workload: "twitter", Serializer: "protobuf", Datapath: "udp",
			SLOP99us: 500, MaxRPSAtSLO: 16000, MaxAchievedRPS: 30000, MaxRPSSaturated: 50000, SaturatedServerCPUus: 5,
			LoadAvg: 0.5, CPUs: 2, BusyPoll: true,
			Points: []bench.Point{
				{OfferedRPS: 16000, AchievedRPS: 16000, P50us: 45, P99us: 150, P999us: 350, MeetsSLO: true},
				{OfferedRPS: 32000, AchievedRPS: 30000, P50us: 200, P99us: 1500, P999us: 3000},
			}},
	}
}

// WriteTable prints one table per group; with saturation points measured it
// adds the saturated closed-loop rate and the server's CPU time per request,
// each compared with the best baseline.
func ExampleWriteTable() {
	_ = bench.WriteTable(os.Stdout, exampleSeries())
	// Output:
	// demo twitter (SLO p99 500 µs)
	//   serializer         max rps at SLO  p50 µs  p99 µs  vs best baseline  max rps saturated (closed loop)  vs best baseline  server CPU µs/req (saturated)  best baseline / this
	//   cornflakes/hybrid  20.0k           40.0    120.0   1.25x             60.0k                            1.20x             4.00                           1.25x
	//   protobuf           16.0k           45.0    150.0   -                 50.0k                            -                 5.00                           -
}

// WriteCSV writes one row per load point, with its series' columns
// repeated (the header is CSVHeader).
func ExampleWriteCSV() {
	_ = bench.WriteCSV(os.Stdout, exampleSeries())
	// Output:
	// experiment,label,workload,serializer,mode,serialize_and_send,datapath,slo_p99_us,max_rps_at_slo,offered_rps,achieved_rps,achieved_units_per_sec,p50_us,p99_us,p999_us,errors,lost,mismatches,meets_slo,server_cpu_us
	// demo,,twitter,cornflakes,hybrid,,udp,500,20000,20000,20000,0,40,120,300,0,0,0,true,0
	// demo,,twitter,cornflakes,hybrid,,udp,500,20000,40000,39000,0,90,900,2000,0,0,0,false,0
	// demo,,twitter,protobuf,,,udp,500,16000,16000,16000,0,45,150,350,0,0,0,true,0
	// demo,,twitter,protobuf,,,udp,500,16000,32000,30000,0,200,1500,3000,0,0,0,false,0
}

// WriteJSON writes the series as `cornflakes bench --json` does, and
// ReadJSON reads them back, e.g. to compare two runs.
func ExampleWriteJSON() {
	var buf bytes.Buffer
	if err := bench.WriteJSON(&buf, exampleSeries()[:1]); err != nil {
		panic(err)
	}
	back, err := bench.ReadJSON(bytes.NewReader(buf.Bytes()))
	fmt.Println(err, reflect.DeepEqual(back, exampleSeries()[:1]))
	fmt.Print(buf.String())
	// Output:
	// <nil> true
	// [
	//   {
	//     "experiment": "demo",
	//     "workload": "twitter",
	//     "serializer": "cornflakes",
	//     "mode": "hybrid",
	//     "datapath": "udp",
	//     "max_rps_at_slo": 20000,
	//     "slo_p99_us": 500,
	//     "points": [
	//       {
	//         "offered_rps": 20000,
	//         "achieved_rps": 20000,
	//         "p50_us": 40,
	//         "p99_us": 120,
	//         "p999_us": 300,
	//         "meets_slo": true
	//       },
	//       {
	//         "offered_rps": 40000,
	//         "achieved_rps": 39000,
	//         "p50_us": 90,
	//         "p99_us": 900,
	//         "p999_us": 2000,
	//         "meets_slo": false
	//       }
	//     ],
	//     "max_achieved_rps": 39000,
	//     "max_rps_saturated": 60000,
	//     "saturated_server_cpu_us": 4,
	//     "loadavg": 0.5,
	//     "cpus": 2,
	//     "busy_poll": true
	//   }
	// ]
}

// Preload loads a workload's data set through a Conn (here the in-process
// storeConn of the Run example), keeping up to window requests in flight.
func ExamplePreload() {
	w, err := workload.Parse("google:keys=1000")
	if err != nil {
		panic(err)
	}
	store := workload.NewMemStore()
	n, err := bench.Preload(context.Background(), w, &storeConn{store: store}, 16, 0)
	fmt.Println(n, "requests,", store.Len(), "keys,", err)
	// Output:
	// 1000 requests, 1000 keys, <nil>
}

// A SyscallCost as the machine check reports it, to the nanosecond
// (MeasureSyscall measures one; these numbers are made up).
func ExampleSyscallCost() {
	fmt.Println(bench.SyscallCost{Median: 54 * time.Nanosecond})
	fmt.Println(bench.SyscallCost{Median: 1234 * time.Nanosecond, Why: "page-table isolation without PCID"})
	// Output:
	// a system call costs 54ns
	// a system call costs 1.234µs (page-table isolation without PCID)
}
