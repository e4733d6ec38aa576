# Runs inside gdb (see check-winguest), attached to the Windows-shaped guest through QEMU's
# gdbstub. It checks the guest's own layout report against independent oracles: structure
# offsets and symbol addresses from the PDBs (llvm-pdbutil), image facts from the PEs
# (llvm-readobj), guest memory read physically and walked with those offsets (as a debugger
# would, ntoseye-style discovery included), and QEMU's own address translation (gva2gpa).
import json
import os
import re
import socket
import struct
import subprocess

import gdb

images_dir = os.environ["WINGUEST_DIR"]
layout = json.load(open(os.environ["WINGUEST_LAYOUT"]))
encoded_boot = os.environ.get("WINGUEST_ENCODED") == "yes"
failures = []
checked = 0


def expect(what, actual, wanted):
    global checked
    checked += 1
    if actual != wanted:
        if isinstance(actual, bytes) and isinstance(wanted, bytes) and max(len(actual), len(wanted)) > 64:
            first = next((i for i in range(min(len(actual), len(wanted))) if actual[i] != wanted[i]), None)
            failures.append("%s: %d bytes differ from the expected %d (first difference at +0x%x)"
                            % (what, len(actual), len(wanted), first if first is not None else min(len(actual), len(wanted))))
        else:
            failures.append("%s: got %r, expected %r" % (what, actual, wanted))


def num(text):
    return int(text, 16)


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


# ---- Oracles from the files ----------------------------------------------------------------

class pe_image:
    def __init__(self, path):
        self.path = path
        self.data = open(path, "rb").read()
        headers = run("llvm-readobj-14", "--file-headers", "--sections", path)
        self.base = int(re.search(r"ImageBase: (0x[0-9A-Fa-f]+)", headers).group(1), 16)
        self.size = int(re.search(r"SizeOfImage: (\d+)", headers).group(1))
        self.timestamp = int(re.search(r"TimeDateStamp: .*\((0x[0-9A-Fa-f]+)\)", headers).group(1), 16)
        self.sections = []
        for m in re.finditer(r"Name: (\S+) .*?VirtualSize: (0x[0-9A-Fa-f]+)\s+VirtualAddress: (0x[0-9A-Fa-f]+)"
                             r"\s+RawDataSize: (\d+)\s+PointerToRawData: (0x[0-9A-Fa-f]+).*?Characteristics \[ \((0x[0-9A-Fa-f]+)\)",
                             headers, re.S):
            self.sections.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4)),
                                  int(m.group(5), 16), int(m.group(6), 16)))


class pdb_file:
    def __init__(self, path, image):
        self.image = image
        self.fields = {}   # struct name -> {member: offset}
        self.sizes = {}
        types = run("llvm-pdbutil-14", "dump", "-types", path)
        field_lists = {}
        current = None
        for line in types.splitlines():
            head = re.match(r"\s*(0x[0-9A-F]+) \| (LF_\w+)", line)
            if head:
                current = None
                if head.group(2) == "LF_FIELDLIST":
                    current = field_lists.setdefault(int(head.group(1), 16), {})
                last_kind = head.group(2)
                last_name = re.search(r"`([^`]*)`", line)
                continue
            member = re.search(r"- LF_MEMBER \[name = `(\w+)`, Type = [^,]*(?:\([^)]*\))?, offset = (\d+)", line)
            if member and current is not None:
                current[member.group(1)] = int(member.group(2))
            definition = re.search(r"field list: (0x[0-9A-F]+)", line)
            if definition and last_kind in ("LF_STRUCTURE", "LF_UNION") and last_name:
                self.fields[last_name.group(1)] = field_lists.get(int(definition.group(1), 16), {})
        self.symbols = {}
        text = run("llvm-pdbutil-14", "dump", "-globals", "-publics", path)
        for m in re.finditer(r"S_(?:GDATA32|LDATA32|PUB32) \[size = \d+\] `(\w+)`\n.*?addr = (\d+):(\d+)", text):
            self.symbols.setdefault(m.group(1), self.rva(int(m.group(2)), int(m.group(3))))
        self.functions = {}
        text = run("llvm-pdbutil-14", "dump", "-symbols", path)
        for m in re.finditer(r"S_GPROC32 \[size = \d+\] `(\w+)`\n.*?addr = (\d+):(\d+), code size = (\d+)", text):
            start = self.rva(int(m.group(2)), int(m.group(3)))
            self.functions[m.group(1)] = (start, start + int(m.group(4)))

    def rva(self, section, offset):
        return self.image.sections[section - 1][2] + offset

    def off(self, struct_name, member):
        return self.fields[struct_name][member]

    def address(self, name):
        return self.image.base + self.symbols[name]


ntos = pe_image(os.path.join(images_dir, "ntoskrnl.exe"))
nt = pdb_file(os.path.join(images_dir, "ntkrnlmp.pdb"), ntos)
module_files = {"ntoskrnl.exe": ntos, "hal.dll": pe_image(os.path.join(images_dir, "hal.dll")),
                "thdrv.sys": pe_image(os.path.join(images_dir, "thdrv.sys"))}

# ---- Guest memory ----------------------------------------------------------------------------

inferior = gdb.selected_inferior()


def set_physical(on):
    gdb.execute("maintenance packet Qqemu.PhyMemMode:%d" % (1 if on else 0), to_string=True)


set_physical(True)
page_cache = {}
# The first 16 MiB in 1 MiB reads: the directory-table scan looks at every page of it.
for chunk in range(0, 0x1000000, 0x100000):
    data = bytes(inferior.read_memory(chunk, 0x100000))
    for off in range(0, 0x100000, 0x1000):
        page_cache[chunk + off] = data[off:off + 0x1000]


def phys(pa, size):
    out = b""
    while size > 0:
        page = pa & ~0xFFF
        if page not in page_cache:
            page_cache[page] = bytes(inferior.read_memory(page, 0x1000))
        take = min(size, 0x1000 - (pa & 0xFFF))
        out += page_cache[page][pa & 0xFFF:(pa & 0xFFF) + take]
        pa += take
        size -= take
    return out


def q(pa):
    return struct.unpack("<Q", phys(pa, 8))[0]


PFN = 0x000FFFFFFFFFF000


def translate(dtb, va):
    """(pa, page size, leaf entry) or None, walking the 4-level tables as the MMU does."""
    table = dtb & PFN
    for level, shift in ((3, 39), (2, 30), (1, 21), (0, 12)):
        e = q(table + ((va >> shift) & 511) * 8)
        if not e & 1:
            return None
        if level in (2, 1) and e & 0x80:
            size = 1 << shift
            return ((e & PFN & ~(size - 1)) | (va & (size - 1)), size, e)
        table = e & PFN
    return ((e & PFN) | (va & 0xFFF), 0x1000, e)


def virt(dtb, va, size):
    out = b""
    while size > 0:
        t = translate(dtb, va)
        if t is None:
            raise ValueError("0x%x is not mapped under 0x%x" % (va, dtb))
        take = min(size, 0x1000 - (va & 0xFFF))
        out += phys(t[0], take)
        va += take
        size -= take
    return out


def vq(dtb, va):
    return struct.unpack("<Q", virt(dtb, va, 8))[0]


def vd(dtb, va):
    return struct.unpack("<I", virt(dtb, va, 4))[0]


def unicode(dtb, va):
    length = struct.unpack("<H", virt(dtb, va, 2))[0]
    return virt(dtb, vq(dtb, va + 8), length).decode("utf-16-le")


def walk(dtb, head, link_offset, limit=64):
    out, entry = [], vq(dtb, head)
    while entry != head and len(out) < limit:
        out.append(entry - link_offset)
        entry = vq(dtb, entry)
    return out


# ---- Discovery as a debugger does it (ntoseye's scans) ----------------------------------------

KUSER = 0xFFFFF78000000000
candidates = []
for dtb in range(0x1000, 0x1000000, 0x1000):
    upper = phys(dtb + 256 * 8, 256 * 8)
    selfs = [i for i in range(256) if (struct.unpack_from("<Q", upper, 8 * i)[0] & PFN) == dtb
             and struct.unpack_from("<Q", upper, 8 * i)[0] & 1]
    if len(selfs) != 1:
        continue
    t = translate(dtb, KUSER)
    if t and not t[2] & 4 and t[2] >> 63:
        candidates.append((dtb, 256 + selfs[0]))
expect("directory tables found by the self-map scan",
       sorted(c[0] for c in candidates), sorted(num(p["dtb"]) for p in layout["processes"]))
expect("self-map index", {c[1] for c in candidates}, {num(layout["self_map_index"])})
system_dtb = num(layout["system_dtb"])

kernel_hits = []


def scan_for_kernel(table, level, base, lo, hi):
    """Visits the present leaves of [lo, hi) under `table` (a table of the given level)."""
    shift = 12 + 9 * level
    for i in range(512):
        va = base | (i << shift)
        if va + (1 << shift) <= lo or va >= hi:
            continue
        e = q(table + 8 * i)
        if not e & 1:
            continue
        if level == 0 or (level in (1, 2) and e & 0x80):
            if not e & 4 and e >> 63:  # kernel-only and no-execute, as the image header page is
                page = phys(e & PFN, 0x1000)
                if page[:4] == b"MZ\x90\x00" and any(page[o:o + 8] == b"POOLCODE" for o in range(0, 0x1000, 8)):
                    kernel_hits.append(va)
            continue
        scan_for_kernel(e & PFN, level - 1, va, lo, hi)


scan_for_kernel(system_dtb, 3, 0xFFFF000000000000, 0xFFFFF80000000000, 0xFFFFF80800000000)
expect("kernel image found by the MZ/POOLCODE scan", kernel_hits, [ntos.base])
expect("layout kernel_base", num(layout["kernel_base"]), ntos.base)

# ---- KUSER_SHARED_DATA -------------------------------------------------------------------------

kuser = virt(system_dtb, KUSER, 0x400)
expect("NtBuildNumber in KUSER_SHARED_DATA", struct.unpack_from("<I", kuser, 0x260)[0], num(layout["build"]))
expect("NtMajorVersion", struct.unpack_from("<I", kuser, 0x26C)[0], 10)
expect("NtBuildNumber export", vd(system_dtb, nt.address("NtBuildNumber")) & 0xFFFF, num(layout["build"]))

# ---- Symbols the layout names ------------------------------------------------------------------

for key, symbol in (("ps_active_process_head", "PsActiveProcessHead"), ("ps_loaded_module_list", "PsLoadedModuleList"),
                    ("kpcr", "KiInitialPcr"), ("kd_version_block", "KdVersionBlock")):
    expect("layout %s is nt!%s" % (key, symbol), num(layout[key]), nt.address(symbol))
expect("PsInitialSystemProcess", vq(system_dtb, nt.address("PsInitialSystemProcess")), num(layout["processes"][0]["eprocess"]))
expect("MmPteBase", vq(system_dtb, nt.address("MmPteBase")), 0xFFFF000000000000 | (num(layout["self_map_index"]) << 39))

# ---- Processes and threads, walked with the PDB's offsets ----------------------------------------

E = lambda m: nt.off("_EPROCESS", m)
found = []
for ep in walk(system_dtb, nt.address("PsActiveProcessHead"), E("ActiveProcessLinks")):
    name = virt(system_dtb, ep + E("ImageFileName"), 15).split(b"\0")[0].decode()
    dtb = vq(system_dtb, ep + nt.off("_KPROCESS", "DirectoryTableBase"))
    threads = []
    for et in walk(system_dtb, ep + E("ThreadListHead"), nt.off("_ETHREAD", "ThreadListEntry")):
        cid = et + nt.off("_ETHREAD", "Cid")
        owner = vq(system_dtb, et + nt.off("_KTHREAD", "Process"))
        expect("%s thread %x owner" % (name, et), owner, ep)
        expect("%s thread %x Cid.UniqueProcess" % (name, et), vq(system_dtb, cid), vq(system_dtb, ep + E("UniqueProcessId")))
        threads.append({"ethread": et, "tid": vq(system_dtb, cid + 8), "teb": vq(system_dtb, et + nt.off("_KTHREAD", "Teb"))})
    kthreads = walk(system_dtb, ep + nt.off("_KPROCESS", "ThreadListHead"), nt.off("_KTHREAD", "ThreadListEntry"))
    expect("%s KPROCESS.ThreadListHead" % name, kthreads, [t["ethread"] for t in threads])
    found.append({"eprocess": ep, "name": name, "pid": vq(system_dtb, ep + E("UniqueProcessId")),
                  "parent": vq(system_dtb, ep + E("InheritedFromUniqueProcessId")), "dtb": dtb,
                  "peb": vq(system_dtb, ep + E("Peb")), "threads": threads})
wanted = [{"eprocess": num(p["eprocess"]), "name": p["name"], "pid": num(p["pid"]), "parent": num(p["parent"]),
           "dtb": num(p["dtb"]), "peb": num(p["peb"]),
           "threads": [{"ethread": num(t["ethread"]), "tid": num(t["tid"]), "teb": num(t["teb"])} for t in p["threads"]]}
          for p in layout["processes"]]
expect("processes from PsActiveProcessHead", found, wanted)
expect("at least three processes with two threads each", len(found) >= 3 and all(len(p["threads"]) == 2 for p in found), True)

# Each user process: its own page tables, its PEB loader list, KUSER_SHARED_DATA's user alias,
# and a page at the same VA whose bytes differ per process.
patterns = set()
for p in layout["processes"][1:]:
    dtb = num(p["dtb"])
    page = p["user_page"]
    data = virt(dtb, num(page["va"]), num(page["len"]))
    pid = num(p["pid"])
    want = bytearray(((k * num(page["mul"]) + num(page["add"])) & 0xFF) for k in range(num(page["len"])))
    want[0:16] = ("TOOLHOST-PID-%03x" % pid).encode()
    expect("%s user page" % p["name"], data, bytes(want))
    expect("%s user page PA" % p["name"], translate(dtb, num(page["va"]))[0], num(page["pa"]))
    patterns.add(data)
    expect("%s user page unmapped under System" % p["name"], translate(system_dtb, num(page["va"])), None)
    peb = num(p["peb"])
    ldr = vq(dtb, peb + nt.off("_PEB", "Ldr"))
    L = lambda m: nt.off("_LDR_DATA_TABLE_ENTRY", m)
    mods = [(unicode(dtb, e + L("BaseDllName")), vq(dtb, e + L("DllBase")))
            for e in walk(dtb, ldr + nt.off("_PEB_LDR_DATA", "InLoadOrderModuleList"), 0)]
    expect("%s PEB loader list" % p["name"], [m[0] for m in mods], [p["name"], "ntdll.dll"])
    expect("%s PEB loader list: the image first" % p["name"], mods[0][1] if mods else None, num(p["image_base"]))
    for module, base in mods:
        expect("%s %s starts with MZ" % (p["name"], module), virt(dtb, base, 2), b"MZ")
    expect("%s ImageBaseAddress" % p["name"], vq(dtb, peb + nt.off("_PEB", "ImageBaseAddress")), num(p["image_base"]))
    user_kuser = translate(dtb, 0x7FFE0000)
    expect("%s KUSER_SHARED_DATA alias" % p["name"], (user_kuser[0], bool(user_kuser[2] & 4)),
           (translate(system_dtb, KUSER)[0], True))
expect("user pages differ per process", len(patterns), len(layout["processes"]) - 1)

# ---- Kernel modules ----------------------------------------------------------------------------

K = lambda m: nt.off("_KLDR_DATA_TABLE_ENTRY", m)
modules = []
for e in walk(system_dtb, nt.address("PsLoadedModuleList"), K("InLoadOrderLinks")):
    modules.append((unicode(system_dtb, e + K("BaseDllName")), vq(system_dtb, e + K("DllBase")),
                    vd(system_dtb, e + K("SizeOfImage")), vd(system_dtb, e + K("TimeDateStamp"))))
expect("PsLoadedModuleList", modules, [(n, f.base, f.size, f.timestamp) for n, f in module_files.items()])
for name, f in module_files.items():
    for sname, vsize, rva, raw, ptr, flags in f.sections:
        if flags & 0x80000000:
            continue  # writable: the kernel has changed it since
        expect("%s %s in memory equals the file" % (name, sname), virt(system_dtb, f.base + rva, vsize),
               f.data[ptr:ptr + vsize])

# ---- The KD debugger data block ------------------------------------------------------------------

head = nt.address("KdpDebuggerDataListHead")
block = vq(system_dtb, head)
expect("KdpDebuggerDataListHead.Flink is KdDebuggerDataBlock", block, nt.address("KdDebuggerDataBlock"))
expect("KdpDataBlockEncoded", virt(system_dtb, nt.address("KdpDataBlockEncoded"), 1)[0], 1 if encoded_boot else 0)
raw = virt(system_dtb, block, 0x368)
never = vq(system_dtb, nt.address("KiWaitNever"))
always = vq(system_dtb, nt.address("KiWaitAlways"))
mask = (1 << 64) - 1


def decode(v):
    rotated = v ^ never
    n = never & 63
    rotated = ((rotated << n) | (rotated >> (64 - n))) & mask if n else rotated
    return always ^ int.from_bytes((rotated ^ nt.address("KdpDataBlockEncoded")).to_bytes(8, "little"), "big")


qwords = list(struct.unpack("<%dQ" % (0x368 // 8), raw))
expect("raw OwnerTag is 'KDBG' only when not encoded", raw[0x10:0x14] == b"KDBG", not encoded_boot)
if encoded_boot:
    qwords = [decode(v) for v in qwords]
kdbg = struct.pack("<%dQ" % len(qwords), *qwords)
expect("KDBG OwnerTag", kdbg[0x10:0x14], b"KDBG")
expect("KDBG Size", struct.unpack_from("<I", kdbg, 0x14)[0], 0x368)
expect("KDBG KernBase", struct.unpack_from("<Q", kdbg, 0x18)[0], ntos.base)
expect("KDBG PsLoadedModuleList", struct.unpack_from("<Q", kdbg, 0x48)[0], nt.address("PsLoadedModuleList"))
expect("KDBG PsActiveProcessHead", struct.unpack_from("<Q", kdbg, 0x50)[0], nt.address("PsActiveProcessHead"))
expect("KDBG KiProcessorBlock", struct.unpack_from("<Q", kdbg, 0x218)[0], nt.address("KiProcessorBlock"))
expect("KDBG OffsetEprocessPeb", struct.unpack_from("<H", kdbg, 0x2AA)[0], E("Peb"))
version = virt(system_dtb, nt.address("KdVersionBlock"), 0x28)
expect("KdVersionBlock KernBase/PsLoadedModuleList/DebuggerDataList", struct.unpack_from("<3Q", version, 0x10),
       (ntos.base, nt.address("PsLoadedModuleList"), head))

# ---- The processor: CR3, KPCR, the current thread --------------------------------------------------

set_physical(False)
regs = {r: int(gdb.parse_and_eval("$" + r)) & mask for r in ("cr3", "rip", "rsp")}
expect("CR3 is System's DirectoryTableBase", regs["cr3"] & PFN, system_dtb)
try:
    gs_base = int(gdb.parse_and_eval("$gs_base")) & mask
    expect("GS base is the KPCR", gs_base, nt.address("KiInitialPcr"))
except gdb.error:
    pass
pcr = nt.address("KiInitialPcr")
prcb = pcr + nt.off("_KPCR", "Prcb")
expect("KPCR.Self", vq(system_dtb, pcr + nt.off("_KPCR", "Self")), pcr)
expect("KPRCB.CurrentThread", vq(system_dtb, prcb + nt.off("_KPRCB", "CurrentThread")), num(layout["current_thread"]))

# ---- Address translation: this walk against QEMU's gva2gpa, and the self-map PTEs ---------------

def qmp(command):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["WINGUEST_QMP"])
    f = s.makefile("rw")
    f.readline()
    f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
    f.flush()
    f.readline()
    f.write(json.dumps({"execute": "human-monitor-command", "arguments": {"command-line": command}}) + "\n")
    f.flush()
    while True:
        reply = json.loads(f.readline())
        if "return" in reply or "error" in reply:
            s.close()
            return reply.get("return", "")


pte_base = num(layout["pte_base"])
for name, size in (("4k", 0x1000), ("2m", 0x200000), ("1g", 0x40000000), ("paged_valid", 0x1000)):
    page = layout["pages"][name]
    va = num(page["va"]) + 0x123
    t = translate(system_dtb, va)
    expect("%s page size" % name, t[1], size)
    expect("%s PA" % name, t[0], num(page["pa"]) + 0x123)
    answer = qmp("gva2gpa 0x%x" % va)
    m = re.search(r"gpa: (0x[0-9a-f]+)", answer)
    expect("QEMU gva2gpa for the %s page" % name, int(m.group(1), 16) if m else answer, t[0])
for name in ("transition", "paged_out"):
    page = layout["pages"][name]
    va = num(page["va"])
    pte_va = pte_base + ((va >> 9) & 0x7FFFFFFFF8)
    expect("%s PTE through the self-map" % name, struct.unpack("<Q", bytes(inferior.read_memory(pte_va, 8)))[0],
           num(page["pte"]))
    expect("%s is not present" % name, translate(system_dtb, va), None)
    answer = qmp("gva2gpa 0x%x" % va)
    expect("QEMU gva2gpa refuses %s" % name, "gpa:" in answer, False)

# ---- Run control: bp nt!NtCreateFile stops there, called from IopCreateFileWorker ------------------

target = nt.address("NtCreateFile")
gdb.execute("hbreak *0x%x" % target, to_string=True)
gdb.execute("continue", to_string=True)
expect("stopped at nt!NtCreateFile", int(gdb.parse_and_eval("$rip")) & mask, target)
rsp = int(gdb.parse_and_eval("$rsp")) & mask
ret = struct.unpack("<Q", bytes(inferior.read_memory(rsp, 8)))[0]
lo, hi = nt.functions["IopCreateFileWorker"]
expect("NtCreateFile's caller is IopCreateFileWorker", ntos.base + lo <= ret < ntos.base + hi, True)

for f in failures:
    print("check-winguest: FAIL " + f)
if not failures:
    print("check-winguest: all good (%d checks, %s KDBG)" % (checked, "encoded" if encoded_boot else "plain"))
gdb.execute("delete", to_string=True)
gdb.execute("detach", to_string=True)
