/*
 * mach/mach_vm.h stand-in for scripts/darwin-check.sh only (never used by a
 * real build): zig 0.11's bundled macOS headers lack this file, which the
 * Prometheus client's darwin cgo memory collector includes. It declares the
 * one function that file calls, with the prototype of macOS's header; the
 * check compiles and does not link, so a declaration is all it needs.
 */
#ifndef WOOLLY_DARWIN_SHIM_MACH_VM_H
#define WOOLLY_DARWIN_SHIM_MACH_VM_H
#include <mach/mach_types.h>
kern_return_t mach_vm_region(vm_map_read_t target_task, mach_vm_address_t *address, mach_vm_size_t *size,
                             vm_region_flavor_t flavor, vm_region_info_t info, mach_msg_type_number_t *infoCnt,
                             mach_port_t *object_name);
#endif
