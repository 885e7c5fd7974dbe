//go:build !cgo

package main

import "encoding/binary"

// sumWords returns the wrapping sum of the little-endian 8-byte words of b
// (len(b) a multiple of 8). Without cgo the plain read is this Go loop,
// which may not reach the memory's speed on every machine.
func sumWords(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		s0 += binary.LittleEndian.Uint64(b[i:])
		s1 += binary.LittleEndian.Uint64(b[i+8:])
		s2 += binary.LittleEndian.Uint64(b[i+16:])
		s3 += binary.LittleEndian.Uint64(b[i+24:])
	}
	for ; i+8 <= len(b); i += 8 {
		s0 += binary.LittleEndian.Uint64(b[i:])
	}
	return s0 + s1 + s2 + s3
}
