package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/metrics"
	"github.com/cornflakes-go/cornflakes/service"
)

// A Metrics is a service.Observer: pass it to service.WithServerObserver
// and service.WithClientObserver; here one call is observed by hand.
func Example() {
	m := metrics.New()
	d := &service.ServiceDesc{Name: "helloworld.Greeter", Methods: []service.MethodDesc{{Name: "SayHello"}}}
	info := &service.MethodInfo{FullMethod: d.FullMethod(0), Service: d, Method: 0}
	m.ObserveCall(service.ServerSide, info, service.NotFound, 3*time.Microsecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "cornflakes_rpc_calls_total{") {
			fmt.Println(line)
		}
	}
	// Output:
	// cornflakes_rpc_calls_total{rpc_method="SayHello",rpc_service="helloworld.Greeter",rpc_status_code="NotFound",side="server"} 1
}
