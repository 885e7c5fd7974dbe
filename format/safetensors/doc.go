// Package safetensors reads and writes the safetensors tensor file format used by
// Hugging Face checkpoints and PEFT adapters.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON describing every
// tensor (dtype, shape, byte offsets into the data area), then the data area itself.
// Files are opened with mmap, so opening a multi-gigabyte checkpoint reads only its
// header; a tensor's bytes are paged in when they are first touched.
//
// What this package owns:
//   - ParseHeader: strict, panic-free validation of a header against the data length
//     (known dtype, shape × dtype size = byte length, offsets in range, no overlaps or
//     holes, no duplicate names, header at most MaxHeaderSize bytes).
//   - OpenFile: one mmap'd file; Open: a file, a folder holding model.safetensors, or a
//     sharded folder described by model.safetensors.index.json, all behind one Set that
//     looks tensors up by name.
//   - Write / Encode / WriteSharded: the writer (tensors ordered by dtype alignment then
//     name, header padded with spaces to 8 bytes, __metadata__ {"format":"pt"}, atomic
//     temp-file + rename).
//   - Conversions between the stored dtypes and []float32 (bf16 and f16 both ways with
//     round-to-nearest-even, integers and bool widened).
//
// Byte slices handed out by a File or Set point into the mapping and are valid only
// until Close; the Float32 helpers copy.
package safetensors
