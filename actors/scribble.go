//go:build !ferry_scribble

package actors

// scribblePayloads makes `ferry run` overwrite every payload buffer given back to the pool
// (aeron.BufferPool.Scribble). Only test builds set it (-tags ferry_scribble): see
// scribble_on.go.
const scribblePayloads = false
