package respbench_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/resp/respbench"
)

// A ReplyScanner counts the replies of a stream as its pieces arrive and
// fails on the first that is not the expected shape.
func ExampleReplyScanner() {
	sc, err := respbench.NewReplyScanner(respbench.Shape{Kind: '$', N: 3})
	if err != nil {
		panic(err)
	}
	n1, err1 := sc.Feed([]byte("$3\r\nabc\r\n$3\r\nd"))
	n2, err2 := sc.Feed([]byte("ef\r\n$2\r\nxy\r\n"))
	fmt.Println(n1, err1)
	fmt.Println(n2, err2)
	// Output:
	// 1 <nil>
	// 1 respbench: bulk string of "2" bytes, want 3
}
