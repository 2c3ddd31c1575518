package wacz

import (
	"crypto/sha256"
	"hash"
)

// asyncHash is a SHA-256 computed on another goroutine: Write copies
// the bytes into one of a few buffers and returns, so that hashing runs
// beside the caller's own work (the other hash, CRC-32, inflating,
// writing) on another core. Sum waits for the bytes written so far.
type asyncHash struct {
	h     hash.Hash
	work  chan []byte
	free  chan []byte
	done  chan struct{}
	sum   []byte
	ended bool
	// made counts the buffers made so far (by Write, as it needs them).
	made int
}

const (
	asyncBuffers = 4
	asyncChunk   = 1 << 20
	smallChunk   = 64 << 10
)

func newAsyncHash() *asyncHash { return newAsyncHashOf(sha256.New()) }

// newAsyncHashOf goes on hashing from h, which may have hashed bytes
// already (detach's).
func newAsyncHashOf(h hash.Hash) *asyncHash {
	a := &asyncHash{h: h, work: make(chan []byte, asyncBuffers), free: make(chan []byte, asyncBuffers), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.work {
			a.h.Write(b)
			a.free <- b[:0]
		}
	}()
	return a
}

func (a *asyncHash) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		b := a.buffer(len(p))
		k := min(len(p), cap(b))
		b = append(b, p[:k]...)
		a.work <- b
		p = p[k:]
	}
	return n, nil
}

// buffer is a free buffer for n bytes to hash, made if none is and
// fewer than asyncBuffers were, the first no larger than those bytes
// need (at least smallChunk): a small member's hash makes one small
// buffer, where four of asyncChunk made up front were 4 MiB to clear
// for every hash (0.17 CPU s of a WACZ run on the 1 GB bench collection,
// most of it for members of a few kilobytes; BenchmarkAsyncHashSmall).
func (a *asyncHash) buffer(n int) []byte {
	select {
	case b := <-a.free:
		return b
	default:
	}
	if a.made < asyncBuffers {
		size := asyncChunk
		if a.made == 0 {
			size = min(max(n, smallChunk), asyncChunk)
		}
		a.made++
		return make([]byte, 0, size)
	}
	return <-a.free
}

// Sum waits for the bytes written and returns their SHA-256; the hash
// takes no more writes after it.
func (a *asyncHash) Sum() []byte {
	if !a.ended {
		a.ended = true
		close(a.work)
		<-a.done
		a.sum = a.h.Sum(nil)
	}
	return a.sum
}

// detach waits for the bytes written and returns the hash with their
// state, not finished: newAsyncHashOf goes on from it. The asyncHash
// takes no more writes after it.
func (a *asyncHash) detach() hash.Hash {
	if !a.ended {
		a.ended = true
		close(a.work)
		<-a.done
	}
	return a.h
}
