// Command inflatehash is the floor warcsum is measured against: it inflates
// multi-member gzip files with klauspost/compress (one thread, multistream)
// and SHA-1s every decompressed byte, doing nothing else. It prints the
// compressed and uncompressed byte counts and the time taken.
//
//	go run ./scripts/inflatehash FILE...
package main

import (
	"bufio"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/gzip"
)

func main() {
	var compressed, uncompressed int64
	start := time.Now()
	h := sha1.New()
	zr := new(gzip.Reader)
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fi, _ := f.Stat()
		compressed += fi.Size()
		if err := zr.Reset(bufio.NewReaderSize(f, 256<<10)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(2)
		}
		n, err := io.Copy(h, zr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(2)
		}
		uncompressed += n
		f.Close()
	}
	fmt.Printf("compressed %d uncompressed %d seconds %.3f sha1 %x\n", compressed, uncompressed, time.Since(start).Seconds(), h.Sum(nil))
}
