package cudafake

import (
	"fmt"
	"syscall"
	"unsafe"
)

// MemAllocHost is cuMemAllocHost_v2. Page-locked host memory is host
// memory at a real address here (an anonymous mmap), in every mode of the
// fake, kept apart from device memory: it is no operand of a device call
// (a copy from the device may write it, as any host memory).
func (d *Driver) MemAllocHost(bytes int) (unsafe.Pointer, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuMemAllocHost_v2", true); err != nil {
		return nil, err
	}
	if bytes <= 0 {
		return nil, fail("cuMemAllocHost_v2", errInvalidValue, fmt.Sprintf("%d bytes", bytes))
	}
	mem, err := syscall.Mmap(-1, 0, bytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fail("cuMemAllocHost_v2", errOutOfMemory, fmt.Sprintf("mmap of %d bytes: %v", bytes, err))
	}
	p := unsafe.Pointer(&mem[0])
	if d.pinned == nil {
		d.pinned = map[uintptr][]byte{}
	}
	d.pinned[uintptr(p)] = mem
	return p, nil
}

// MemFreeHost is cuMemFreeHost of memory MemAllocHost returned.
func (d *Driver) MemFreeHost(p unsafe.Pointer) error {
	defer d.mu.Unlock()
	if err := d.enter("cuMemFreeHost", true); err != nil {
		return err
	}
	mem, ok := d.pinned[uintptr(p)]
	if !ok {
		return fail("cuMemFreeHost", errInvalidValue, fmt.Sprintf("%p is not memory of cuMemAllocHost_v2", p))
	}
	delete(d.pinned, uintptr(p))
	if err := syscall.Munmap(mem); err != nil {
		return fail("cuMemFreeHost", errInvalidValue, fmt.Sprintf("munmap %p: %v", p, err))
	}
	return nil
}

// LiveHost returns the number of MemAllocHost allocations not yet freed.
func (d *Driver) LiveHost() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pinned)
}
