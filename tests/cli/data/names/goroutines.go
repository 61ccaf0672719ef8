// Goroutines that spin: their stacks start in runtime.goexit; the runtime preempts them with
// signals (runtime.sigreturn). Runs for os.Args[1] milliseconds.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

//go:noinline
func spin(seed uint64, until time.Time) uint64 {
	x := seed
	for time.Now().Before(until) {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func main() {
	milliseconds := 1000
	if len(os.Args) > 1 {
		milliseconds, _ = strconv.Atoi(os.Args[1])
	}
	until := time.Now().Add(time.Duration(milliseconds) * time.Millisecond)
	var group sync.WaitGroup
	results := make([]uint64, 4)
	for i := range results {
		group.Add(1)
		go func(i int) {
			defer group.Done()
			results[i] = spin(uint64(i), until)
		}(i)
	}
	group.Wait()
	fmt.Println(results[0] ^ results[1] ^ results[2] ^ results[3])
}
